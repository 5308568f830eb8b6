"""ncuh's per-user cache folder: `$NCUH_CACHE_DIR`, else `ncuh` under the XDG cache folder
(`$XDG_CACHE_HOME`, else `~/.cache`); and the one switch of the kept reports and plots.

Tuning winners (`harness.gpu.tuning`), `profile`'s plans, the `pages` section overlays
(`harness.profile.section_overlay`) and the kept reports and plots live under it.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "NCUH_CACHE_DIR"
# one switch for the kept reports and plots (`harness.util.kept_files`)
CACHE_SWITCH_ENV = "NCUH_REPORT_AND_PLOT_CACHE"  # "off": no report or plot is read back or kept
# the switch's former name, read where the new one is unset
OLD_CACHE_SWITCH_ENV = "NCUH_REPORT_CACHE"


def cache_dir() -> Path:
    """The cache folder (not created here). A relative `XDG_CACHE_HOME` is ignored, as the XDG
    Base Directory specification says. `Path.home()` raises RuntimeError where there is no
    home directory; callers that must not fail catch it."""
    directory = os.environ.get(CACHE_ENV)
    if directory:
        return Path(directory)
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "ncuh"


def cache_switch_note() -> str | None:
    """A note for a user who still sets the switch by its former name."""
    if OLD_CACHE_SWITCH_ENV in os.environ and CACHE_SWITCH_ENV not in os.environ:
        return (f"note: {OLD_CACHE_SWITCH_ENV} is now named {CACHE_SWITCH_ENV} "
                "(the old name still works)")
    return None
