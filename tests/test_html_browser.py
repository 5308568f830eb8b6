"""The HTML pages in a real headless browser (Debian's chromium; .ci/run installs it).

The page must load from a file with no network, every embedded image must decode
(naturalWidth > 0), a screenshot must not be blank, and a kernel named `<script>` must show
as text. Skips only when chromium is not installed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from packed_fixtures import NAIVE_SMEM_REPORT, REDUCTION_RUN

from harness.pages.render import render_page, write
from harness.pages.writeup import collect

REPORT = NAIVE_SMEM_REPORT
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")

# Records, once the page has loaded, what the test needs to know about it.
CHECK_SCRIPT = """<script>
window.addEventListener('load', () => {
  const imgs = Array.from(document.images);
  const out = document.createElement('pre');
  out.id = 'ncuh-check';
  out.textContent = JSON.stringify({
    images: imgs.length,
    decoded: imgs.filter(i => i.complete && i.naturalWidth > 0).length,
    widths: imgs.map(i => i.naturalWidth),
    scripts: document.scripts.length,
    title: document.title,
    h1: document.querySelector('h1') ? document.querySelector('h1').textContent : null,
    listings: Array.from(document.querySelectorAll('details.listing')).map(d => ({
      open: d.open,
      rows: d.querySelectorAll('tr').length,
      shown: Array.from(d.querySelectorAll('tr')).filter(r => r.checkVisibility()).length,
      hot: Array.from(d.querySelectorAll('tr.hot')).map(r => r.textContent),
    })),
  });
  document.body.appendChild(out);
});
</script>"""


def _chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-extensions", "--disable-dev-shm-usage", "--hide-scrollbars",
               f"--user-data-dir={tmp / 'profile'}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def _checked(tmp: Path, html_file: Path) -> dict:
    """Load a copy of the page with the check script and return what it recorded."""
    html = html_file.read_text(encoding="utf-8")
    probe = html_file.with_name(f"probe_{html_file.name}")
    probe.write_text(html.replace("</body>", CHECK_SCRIPT + "\n</body>"), encoding="utf-8")
    result = _chromium(tmp, "--virtual-time-budget=10000", "--dump-dom", probe.as_uri())
    match = re.search(r'<pre id="ncuh-check">(.*?)</pre>', result.stdout, re.S)
    assert match, f"page did not finish loading: {result.stderr[-2000:]}"
    return json.loads(match.group(1).replace("&lt;", "<").replace("&gt;", ">")
                      .replace("&quot;", '"').replace("&amp;", "&"))


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("html")
    write(collect([REPORT]), out, "html")
    return out


def test_index_loads_and_every_plot_decodes(pages: Path, tmp_path: Path):
    state = _checked(tmp_path, pages / "index.html")
    # GFLOP/s, stalls, roofline, occupancy, instruction mix, the binding unit's throughput
    assert state["images"] == 6
    assert state["decoded"] == 6, state["widths"]
    assert all(width >= 400 for width in state["widths"])  # 8 in x 100 dpi plots


def test_kernel_page_loads(pages: Path, tmp_path: Path):
    state = _checked(tmp_path, pages / "h100_sgemm_naive_smem_1_sgemm_smem.html")
    assert state["h1"] == "sgemm_smem"
    assert state["scripts"] == 1  # only the probe: the page itself runs no script


def test_source_listings_open_in_place(tmp_path: Path):
    # the reduction's warp_shuffle page: its hot spots have line info and the project's source
    project = Path(__file__).parent.parent / "kernels" / "reduction"
    writeup = collect([REDUCTION_RUN], project=project)
    page = next(p for p in writeup.pages if p.variant == "warp_shuffle")
    html = render_page(page, writeup, "html")
    target = tmp_path / "shuffle.html"
    # every listing opened, as a reader clicking each hot spot would
    target.write_text(html.replace('<details class="listing"', '<details open class="listing"'),
                      encoding="utf-8")
    state = _checked(tmp_path, target)
    listings = state["listings"]
    # hot spots 1 and 5 share line 25; 2, 3 and 4 are lines 26, 31 and 23
    assert len(listings) == 4
    assert all(item["open"] and item["rows"] == item["shown"] for item in listings)
    # a heading and 21 lines, but line 31's: warp_shuffle.cu ends five lines below it
    assert [item["rows"] for item in listings] == [22, 22, 17, 22]
    # line 25: 7,643 samples, 4,211,200 instructions, its indentation kept
    assert listings[0]["hot"] == ["257,6434,211,200        v += in[i];"]
    assert state["scripts"] == 1 and state["images"] == 0  # self-contained, no assets
    closed = tmp_path / "closed.html"
    closed.write_text(html, encoding="utf-8")
    state = _checked(tmp_path, closed)
    assert not any(item["open"] for item in state["listings"])
    assert all(item["shown"] == 0 for item in state["listings"])  # collapsed until opened


def test_screenshot_is_not_blank(pages: Path, tmp_path: Path):
    shot = tmp_path / "index.png"
    _chromium(tmp_path, "--window-size=1200,1600", f"--screenshot={shot}",
              (pages / "index.html").as_uri())
    assert shot.is_file(), "chromium wrote no screenshot"
    from matplotlib.image import imread

    pixels = imread(str(shot))[..., :3]
    assert pixels.shape[0] >= 1000 and pixels.shape[1] >= 1000
    # a blank page is one colour; a rendered table with plots has text and colour
    assert pixels.std() > 0.05
    non_white = (pixels.min(axis=2) < 0.9).mean()
    assert non_white > 0.02


def test_script_kernel_name_shows_as_text(pages: Path, tmp_path: Path):
    writeup = collect([REPORT])
    page = writeup.pages[0]
    evil = "<script>document.title='pwned'</script>"
    page.kernel_name = evil
    page.heading = evil
    html = render_page(page, writeup, "html")
    assert "<script>document.title" not in html
    assert "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in html
    target = tmp_path / "evil.html"
    target.write_text(html, encoding="utf-8")
    state = _checked(tmp_path, target)
    assert state["title"] == evil  # shown as text, never run
    assert state["h1"] == evil
    assert state["scripts"] == 1
    markdown = render_page(page, writeup, "md")
    assert markdown.startswith("# \\<script>document.title='pwned'\\</script>\n")
