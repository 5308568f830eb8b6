"""Small helpers every stage uses: atomic output, input-file checks, the user's cache
folder and the files kept in it, where ncu is installed, Markdown escaping of data, the
user's kernel regex, and work shared with forked children.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import lazy_face

if TYPE_CHECKING:
    from harness.util.atomic import (
        atomic_directory,
        atomic_file_set,
        atomic_path,
        atomic_write_text,
    )
    from harness.util.input_file import (
        column_holds_bad_text,
        holds_bad_text,
        read_text,
        regular_file,
    )
    from harness.util.kept_files import (
        SWITCH_ENV as CACHE_SWITCH_ENV,
    )
    from harness.util.kept_files import (
        inflated,
        mark_used,
        owned_privately,
        private_folder,
        prune,
        read_kept,
        read_owned,
        store,
    )
    from harness.util.kept_files import (
        keep as keep_packed,
    )
    from harness.util.kept_files import (
        wanted as cache_wanted,
    )
    from harness.util.markdown_text import (
        code_span,
        html_text,
        template_value,
    )
    from harness.util.markdown_text import (
        fenced as md_fenced,
    )
    from harness.util.markdown_text import (
        one_line as md_one_line,
    )
    from harness.util.markdown_text import (
        prose as md_prose,
    )
    from harness.util.markdown_text import (
        text as md_text,
    )
    from harness.util.ncu_locate import (
        ncu_executable,
        ncu_install_dirs,
        version_key,
        versioned_roots,
    )
    from harness.util.user_cache import CACHE_ENV, cache_dir
    from harness.util.user_regex import compiled_kernel_regex
    from harness.util.work_queue import (
        forked,
        made_at_once,
        may_fork_now,
        put_index,
        taken_indices,
        usable_cores,
    )

# public name -> (module, attribute), imported on first use so that importing the package does
# no work; not cached here, so a test that replaces the attribute in its module is seen.
_HOMES: dict[str, tuple[str, str]] = {
    "write_file_set": ("harness.util.atomic", "write_file_set"),
    "file_kind": ("harness.util.input_file", "file_kind"),
    "load_toml": ("harness.util.input_file", "load_toml"),
    "load_json": ("harness.util.input_file", "load_json"),
    "refuse_inputs": ("harness.util.atomic", "refuse_inputs"),
    "refuse_input_folders": ("harness.util.atomic", "refuse_input_folders"),
    "terminate_as_interrupt": ("harness.util.signals", "terminate_as_interrupt"),
    "pause_at": ("harness.util.signals", "pause_at"),
    "deferred_signals": ("harness.util.signals", "deferred_signals"),
    "PAUSE_ENV": ("harness.util.signals", "PAUSE_ENV"),
    "CACHE_ENV": ("harness.util.user_cache", "CACHE_ENV"),
    "atomic_directory": ("harness.util.atomic", "atomic_directory"),
    "atomic_file_set": ("harness.util.atomic", "atomic_file_set"),
    "atomic_path": ("harness.util.atomic", "atomic_path"),
    "atomic_write_text": ("harness.util.atomic", "atomic_write_text"),
    "cache_dir": ("harness.util.user_cache", "cache_dir"),
    "keep_packed": ("harness.util.kept_files", "keep"),
    "cache_wanted": ("harness.util.kept_files", "wanted"),
    "CACHE_SWITCH_ENV": ("harness.util.kept_files", "SWITCH_ENV"),
    "mark_used": ("harness.util.kept_files", "mark_used"),
    "inflated": ("harness.util.kept_files", "inflated"),
    "owned_privately": ("harness.util.kept_files", "owned_privately"),
    "read_owned": ("harness.util.kept_files", "read_owned"),
    "private_folder": ("harness.util.kept_files", "private_folder"),
    "prune": ("harness.util.kept_files", "prune"),
    "read_kept": ("harness.util.kept_files", "read_kept"),
    "store": ("harness.util.kept_files", "store"),
    "code_span": ("harness.util.markdown_text", "code_span"),
    "column_holds_bad_text": ("harness.util.input_file", "column_holds_bad_text"),
    "compiled_kernel_regex": ("harness.util.user_regex", "compiled_kernel_regex"),
    "holds_bad_text": ("harness.util.input_file", "holds_bad_text"),
    "html_text": ("harness.util.markdown_text", "html_text"),
    "template_value": ("harness.util.markdown_text", "template_value"),
    "md_fenced": ("harness.util.markdown_text", "fenced"),
    "md_one_line": ("harness.util.markdown_text", "one_line"),
    "md_prose": ("harness.util.markdown_text", "prose"),
    "md_text": ("harness.util.markdown_text", "text"),
    "ncu_executable": ("harness.util.ncu_locate", "ncu_executable"),
    "ncu_install_dirs": ("harness.util.ncu_locate", "ncu_install_dirs"),
    "read_text": ("harness.util.input_file", "read_text"),
    "regular_file": ("harness.util.input_file", "regular_file"),
    "version_key": ("harness.util.ncu_locate", "version_key"),
    "versioned_roots": ("harness.util.ncu_locate", "versioned_roots"),
    "forked": ("harness.util.work_queue", "forked"),
    "made_at_once": ("harness.util.work_queue", "made_at_once"),
    "may_fork_now": ("harness.util.work_queue", "may_fork_now"),
    "put_index": ("harness.util.work_queue", "put_index"),
    "taken_indices": ("harness.util.work_queue", "taken_indices"),
    "usable_cores": ("harness.util.work_queue", "usable_cores"),
}

__all__ = [
    "CACHE_ENV",
    "CACHE_SWITCH_ENV",
    "PAUSE_ENV",
    "atomic_directory",
    "atomic_file_set",
    "atomic_path",
    "atomic_write_text",
    "cache_dir",
    "cache_wanted",
    "code_span",
    "column_holds_bad_text",
    "compiled_kernel_regex",
    "deferred_signals",
    "file_kind",
    "forked",
    "holds_bad_text",
    "html_text",
    "inflated",
    "keep_packed",
    "load_json",
    "load_toml",
    "made_at_once",
    "mark_used",
    "may_fork_now",
    "md_fenced",
    "md_one_line",
    "md_prose",
    "md_text",
    "ncu_executable",
    "ncu_install_dirs",
    "owned_privately",
    "pause_at",
    "private_folder",
    "prune",
    "put_index",
    "read_kept",
    "read_owned",
    "read_text",
    "refuse_input_folders",
    "refuse_inputs",
    "regular_file",
    "store",
    "taken_indices",
    "template_value",
    "terminate_as_interrupt",
    "usable_cores",
    "version_key",
    "versioned_roots",
    "write_file_set",
]

__getattr__, __dir__ = lazy_face(__name__, _HOMES)
