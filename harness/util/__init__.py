"""Small helpers every stage uses: atomic output, input-file checks, the user's cache
folder and the files kept in it, where ncu is installed, Markdown escaping of data, and work
shared with forked children.
"""

from __future__ import annotations

from harness.util.atomic import (
    atomic_directory,
    atomic_file_set,
    atomic_path,
    atomic_write_text,
    refuse_input_folders,
    refuse_inputs,
    write_file_set,
)
from harness.util.input_file import (
    column_holds_bad_text,
    file_kind,
    holds_bad_text,
    load_json,
    load_toml,
    read_text,
    regular_file,
)
from harness.util.kept_files import (
    cache_wanted,
    inflated,
    keep_packed,
    mark_used,
    owned_privately,
    private_folder,
    prune,
    read_kept,
    read_owned,
    store,
)
from harness.util.markdown_text import (
    code_span,
    html_text,
    md_fenced,
    md_one_line,
    md_prose,
    md_text,
    template_value,
)
from harness.util.ncu_locate import ncu_executable, ncu_install_dirs, version_key, versioned_roots
from harness.util.signals import pause_at, terminate_as_interrupt
from harness.util.user_cache import CACHE_ENV, CACHE_SWITCH_ENV, cache_dir, cache_switch_note
from harness.util.user_regex import compiled_kernel_regex
from harness.util.work_queue import (
    forked,
    made_at_once,
    may_fork_now,
    put_index,
    taken_indices,
    usable_cores,
)

__all__ = [
    "CACHE_ENV", "CACHE_SWITCH_ENV", "atomic_directory", "atomic_file_set", "atomic_path",
    "atomic_write_text", "cache_dir", "cache_switch_note", "cache_wanted", "code_span",
    "column_holds_bad_text", "compiled_kernel_regex", "file_kind", "forked", "holds_bad_text",
    "html_text", "inflated", "keep_packed", "load_json", "load_toml", "made_at_once", "mark_used",
    "may_fork_now", "md_fenced", "md_one_line", "md_prose", "md_text", "ncu_executable",
    "ncu_install_dirs", "owned_privately", "pause_at", "private_folder", "prune", "put_index",
    "read_kept", "read_owned", "read_text", "refuse_input_folders", "refuse_inputs", "regular_file",
    "store", "taken_indices", "template_value", "terminate_as_interrupt", "usable_cores",
    "version_key", "versioned_roots", "write_file_set",
]
