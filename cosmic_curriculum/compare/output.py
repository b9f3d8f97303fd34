"""Where a comparison's results go: compare/compare.json, compare/compare.png and
compare/REPORT.md always (atomic writes; committed to the workspace's git when it has
one), the user's --json and --plot as well."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cosmic_curriculum.compare.render import plot_png, report_md, table_lines
from cosmic_curriculum.defaults import COMPARE_DIR
from cosmic_curriculum.system import fsio
from cosmic_curriculum.system.output_files import write_output

# compare/'s files the workspace's git records; everything else there is the arms'.
RECORDED = (".gitignore", "compare.json", "compare.png", "REPORT.md")


def write_outputs(
    doc: dict[str, Any],
    ws: Path,
    json_out: Path | None,
    plot: Path | None,
    refresh: Callable[[Path], str] | None = None,
) -> list[str]:
    """Write everything; the lines to print (the table, the verdict, where files went).
    ``refresh`` rewrites the workspace's own report (which names the study) and gives its
    path, committed with the study."""
    root = ws / COMPARE_DIR
    data = (json.dumps(fsio.without_surrogates_in(doc), indent=1) + "\n").encode()
    png = plot_png(doc)
    fsio.atomic_write_bytes(root / "compare.json", data)
    fsio.atomic_write_bytes(root / "compare.png", png)
    fsio.atomic_write_text(root / "REPORT.md", report_md(doc, "compare.png"))
    if json_out is not None:
        write_output(json_out, data, "--json")
    if plot is not None:
        write_output(plot, png, "--plot")
    wrote = [
        f"{COMPARE_DIR}/compare.json",
        f"{COMPARE_DIR}/compare.png",
        f"{COMPARE_DIR}/REPORT.md",
    ]
    wrote += [str(p) for p in (json_out, plot) if p is not None]
    lines = [*table_lines(doc), f"wrote {', '.join(wrote)}"]
    report: list[str] = []
    if refresh is not None:
        try:
            report.append(refresh(ws))
        except Exception as exc:  # the study is written: the report must not cost it
            lines.append(f"warning: could not rewrite the workspace's report ({exc})")
    return [*lines, *_commit(ws, doc, report)]


def _commit(ws: Path, doc: dict[str, Any], also: list[str]) -> list[str]:
    """The study's files into the workspace's git (the arms stay out: their own
    repositories); a failure is a warning, the files are on disk."""
    from cosmic_curriculum.errors import GitError
    from cosmic_curriculum.vcs.commit import commit_paths
    from cosmic_curriculum.vcs.repo import is_repo

    if not is_repo(ws):
        return []
    paths = [f"{COMPARE_DIR}/{name}" for name in RECORDED] + also
    arms = len({r["arm"] for r in doc["arms"]})
    message = (
        f"chore(compare): the study of {arms} arms x {len(doc['seeds'])} seeds at "
        f"{doc['budget']:,} timesteps"
    )
    try:
        committed = commit_paths(ws, paths, message)
    except GitError as exc:
        return [f"warning: the study is on disk but not committed to git ({exc})"]
    return [f"committed {', '.join(paths)}"] if committed else []
