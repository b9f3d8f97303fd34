"""Files the user names on the command line (`--out`, `--json`, a ladder's `--out-dir`):
every command writes them through :func:`write_output`, with the workspace fence.

A symlink on an output's way (the file's or a directory's) is followed (the shell's `>`
does the same), but only when the path as named and its target lie in the same workspace,
or both outside any: a link never carries a write out of a workspace, nor into one's
files from outside
(docs/RELIABILITY.md, "Outputs, exports and reports").
"""

from __future__ import annotations

import os
from pathlib import Path

from cosmic_curriculum.errors import StateError
from cosmic_curriculum.system import fsio, output_files
from cosmic_curriculum.workspace.locate import workspace_of


def _named_place(directory: Path) -> Path | None:
    return workspace_of(directory, follow_links=False)


def check_output(path: Path, option: str) -> Path:
    """``path`` if :func:`write_output` can write it; else a one-line ``ConfigError``."""
    return output_files.check_output_file(path, option, fence=_named_place)


def write_output(path: Path, data: bytes | str, option: str) -> None:
    """Write ``data`` (text as UTF-8) to the output ``path`` named by ``option``."""
    raw = data if isinstance(data, bytes) else fsio.utf8(data)
    output_files.write_output(path, raw, option, fence=_named_place)


def history_target(path: Path, option: str = "--history") -> Path:
    """The file an `evaluate` appends its record to: checked like any named output, and
    a regular file (or a new one), since a record is appended to what was read. A
    symlink (within the fence) is returned resolved, so the atomic write replaces its
    target, never the link."""
    check_output(path, option)
    if Path(path).exists() and not Path(path).is_file():
        raise StateError(  # exit 1, as for every history that cannot be read
            f"{option} {path}: not a regular file (a device or FIFO); name the "
            "eval_history.json file to append to"
        )
    return Path(os.path.realpath(path)) if Path(path).is_symlink() else Path(path)
