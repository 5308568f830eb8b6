"""Named errors for every expected failure.

Anything raised as an `NcuhError` reaches the user as one line on stderr and exit status 2
(see `harness.cli`). Unexpected exceptions are bugs and keep their tracebacks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

# What must not reach a terminal or a page from data: C0 and C1 controls (ESC starts terminal
# sequences, BEL rings, CR overwrites a line), DEL, the Unicode line and paragraph separators,
# and the bidirectional controls that reorder what a reader sees (U+202E and the like).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                     "\u202a-\u202e\u2066-\u2069]")
_UNSAFE_BUT_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f"
                               "\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


class NcuhError(Exception):
    """An expected failure caused by the input or the environment: exit status 2."""

    exit_code = 2


class ReportError(NcuhError):
    """A report is missing, unreadable, truncated, empty or has no matching kernel."""


class NcuReportUnavailableError(NcuhError):
    """The `ncu_report` Python module cannot be found."""


class NcuNotFoundError(NcuhError):
    """The `ncu` executable is not installed or not on PATH."""


class NoGpuError(NcuhError):
    """No CUDA GPU (or no CuPy) is available for a command that needs one."""


class CounterPermissionError(NcuhError):
    """ncu may not read the GPU performance counters (ERR_NVGPUCTRPERM)."""


class ProfilerError(NcuhError):
    """ncu cannot profile on this machine at all (unsupported GPU, profiler not loadable)."""


class UnknownVariantError(NcuhError):
    """A variant name that the bundled chain does not have."""


class UnsupportedShapeError(NcuhError):
    """A problem size that a variant declares it cannot take."""


class IncompatibleInputsError(NcuhError):
    """Two runs that cannot be compared (different GPU, compute capability, ncu version)."""


class BadSizeError(NcuhError):
    """A size on the command line that is not N or one value per dimension (exit 2)."""


class ProjectError(NcuhError):
    """A project file (ncuh.toml) that cannot be read or does not describe a valid chain.

    `problems` holds every problem found, one line each (`ncuh check` prints them all); the
    message is the first of them, saying how many more there are.
    """

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems: tuple[str, ...] = tuple(problems) or (message,)

    @classmethod
    def of(cls, problems: Sequence[str]) -> ProjectError:
        """One error for all of `problems` (at least one)."""
        more = len(problems) - 1
        message = problems[0] if not more else (
            f"{problems[0]} (and {more} more problem{'s' if more > 1 else ''}: `ncuh check` "
            "names every one)")
        return cls(message, problems)


class OutputError(NcuhError):
    """An output cannot be written: read-only, no permission, disk full, bad path or name."""


class InputFileError(ReportError):
    """An input path that cannot be read as a file: too long, a FIFO/device/socket, no access."""


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: object, *, keep_lines: bool = False) -> str:
    """`text` with control, line-break and bidi characters written as escapes (`\\n`,
    `\\x1b`, `\\u202e`), so a name or path from data can neither add a line nor take over a
    terminal; `keep_lines` keeps newlines and tabs (a table, a page's own lines)."""
    return (_UNSAFE_BUT_LINES if keep_lines else _UNSAFE).sub(_escape, str(text))


def error_line(error: BaseException | str) -> str:
    """The one stderr line for an expected failure, whatever its message holds."""
    return f"ncuh: error: {printable(error)}"


def os_error_text(error: OSError) -> str:
    """An OSError as the few words the OS gives (`No space left on device`), no errno noise."""
    return error.strerror or str(error) or type(error).__name__


def one_line(error: BaseException, folder: Path | None = None) -> str:
    """`Type: message (file line N)` on one line, for an exception raised by a user's code.

    The line named is the deepest frame in `folder` (the project folder) when given, else the
    deepest frame in any file, so the user is pointed at their own code.
    """
    text = " ".join(str(error).split())
    tb = error.__traceback__
    line = ""
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not filename.startswith("<") and (
            folder is None or Path(filename).resolve().is_relative_to(folder.resolve())
        ):
            line = f" ({Path(filename).name} line {tb.tb_lineno})"
        tb = tb.tb_next
    return f"{type(error).__name__}: {text}{line}" if text else f"{type(error).__name__}{line}"


def first_error_line(error: BaseException) -> str:
    """The line that says what went wrong: NVRTC logs put it after a header of file names."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return next((line for line in lines if "error" in line.lower()), lines[0] if lines else "?")
