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
ls .whl/ncu_report-*.whl >/dev/null 2>&1 || echo "no ncu_report wheel carried: ncu's own extras/python is used"
export PYTHONPATH=/tmp/site:$PYTHONPATH
python3 -c "
from harness.report.ncu_import import import_ncu_report
print('ncu_report from', import_ncu_report().__file__)
"
