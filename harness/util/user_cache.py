"""ncuh's per-user cache folder: `$NCUH_CACHE_DIR`, else `~/.cache/ncuh`.

Tuning winners (`harness.gpu.tuning`) and the `pages` section overlays
(`harness.profile.section_overlay`) live under it.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "NCUH_CACHE_DIR"


def cache_dir() -> Path:
    """The cache folder (not created here). `Path.home()` raises RuntimeError where there is
    no home directory; callers that must not fail catch it."""
    directory = os.environ.get(CACHE_ENV)
    return Path(directory) if directory else Path.home() / ".cache" / "ncuh"
