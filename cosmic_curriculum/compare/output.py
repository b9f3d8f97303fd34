"""Where a comparison's results go: compare/compare.json, compare/compare.png and
compare/REPORT.md always (atomic writes), the user's --json and --plot as well."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cosmic_curriculum.compare.results import plot_png, report_md, table_lines
from cosmic_curriculum.defaults import COMPARE_DIR
from cosmic_curriculum.system import fsio
from cosmic_curriculum.system.output_files import write_output


def write_outputs(
    doc: dict[str, Any], ws: Path, json_out: Path | None, plot: Path | None
) -> list[str]:
    """Write everything; the lines to print (the table, the verdict, where files went)."""
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
    return [*table_lines(doc), f"wrote {', '.join(wrote)}"]
