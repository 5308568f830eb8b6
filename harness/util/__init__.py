"""Small helpers every stage uses: atomic output, input-file checks, the user's cache
folder and the files kept in it, where ncu is installed, Markdown escaping of data, the
user's kernel regex, and work shared with worker processes.
"""

from harness.util.atomic import (
    atomic_directory,
    atomic_path,
    atomic_write_text,
    refuse_input_folders,
    refuse_inputs,
    write_file_set,
)
from harness.util.env_switch import switched_off
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
from harness.util.process_pool import parallel_map, usable_cores, worker_pool
from harness.util.signals import pause_at, terminate_as_interrupt
from harness.util.user_cache import CACHE_ENV, cache_dir, cache_switch_note
from harness.util.user_regex import compiled_kernel_regex
