# Sourced by the GPU session scripts (repo root, GPU machine): environment and ncu_report.
# The PyPI ncu-report wheel carried in .whl/ is installed, as `pip install ncuh` would: the copy
# shipped with Nsight Compute 2025.3.1 (<ncu>/extras/python) opens small reports under Python
# 3.12 but crashed (SIGSEGV) exporting the chain's 4096 reports on the H200 (2026-11-22).
OUT=${OUT:-/tmp/ncuh-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD NCUH_CACHE_DIR=$PWD/reports/autotune
log() { echo "== $(date +%T) $*"; }

log "device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
ncu --version | tail -1
# every wheel carried (ncu_report; pydantic and its three, which this machine's Python lacks)
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --target /tmp/site \
    .whl/*.whl 2>/dev/null || echo "no wheels carried in .whl/"
# ncu_report may come as .whl/ncu_report-<version>.tar.xz: the PyPI module folder packed with
# xz (2026.3.1: 11 MB against the wheel's 17 MB, which no longer fits beside the tree in a device
# call's 64 MiB). Packed without its libnvperf_host.so, it takes the one of the Nsight Compute
# that runs (then of the same version as the module, or it may not load).
for packed in .whl/ncu_report*.tar.xz; do
    [ -f "$packed" ] || continue
    mkdir -p /tmp/site && tar -xJf "$packed" -C /tmp/site && echo "ncu_report unpacked from $packed"
    if [ ! -f /tmp/site/ncu_report/libnvperf_host.so ]; then
        nvperf=$(find -L /usr/local/cuda/ /opt/nvidia/ -name libnvperf_host.so \
                 -path '*nsight-compute*target*x64*' 2>/dev/null | sort | tail -1)
        ln -sf "$nvperf" /tmp/site/ncu_report/libnvperf_host.so && echo "libnvperf_host: $nvperf"
    fi
done
ls .whl/ncu_report* >/dev/null 2>&1 || echo "no ncu_report carried: ncu's own extras/python is used"
export PYTHONPATH=/tmp/site:$PYTHONPATH
python3 -c "
from harness.report.ncu_import import import_ncu_report
print('ncu_report from', import_ncu_report().__file__)
"
