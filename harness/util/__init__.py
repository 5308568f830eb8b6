"""Small helpers every stage uses."""

from __future__ import annotations

from harness.util.signals import PAUSE_ENV, deferred_signals, pause_at, terminate_as_interrupt

__all__ = ["PAUSE_ENV", "deferred_signals", "pause_at", "terminate_as_interrupt"]
