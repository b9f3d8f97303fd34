"""`history export`: `eval_history.json` as a table people plot (CSV, JSON lines, Parquet).

One row per evaluation record, columns :data:`COLUMNS`. Counts are the candidate's view
(``wins`` = ``wins_a``, ``losses`` = ``wins_b``); ``score`` and ``gap`` are computed from
the counts (so a seed-format record with counts only gets them too); the intervals, Elo,
gate and hashes come from the record when it has them and are left empty otherwise.
Parquet needs pyarrow (the ``parquet`` extra), imported only for that format.
"""

from __future__ import annotations

import csv
import io
import json
import math
import stat
from pathlib import Path
from typing import Any

from cosmic_curriculum import scoring
from cosmic_curriculum.errors import ConfigError, StateError
from cosmic_curriculum.system import fsio
from cosmic_curriculum.workspace import history
from cosmic_curriculum.workspace.outputs import check_output, write_output

FORMATS = ("csv", "jsonl", "parquet")

# column -> type ("str", "int", "float"); the order is the file's column order.
COLUMNS: dict[str, str] = {
    "time": "str",
    "stage": "int",
    "experiment": "str",
    "attempt": "int",
    "candidate": "str",
    "reference": "str",
    "wins": "int",
    "losses": "int",
    "draws": "int",
    "episodes": "int",
    "score": "float",
    "gap": "float",
    "gap_ci95_lo": "float",
    "gap_ci95_hi": "float",
    "elo": "float",
    "elo_ci95_lo": "float",
    "elo_ci95_hi": "float",
    "gate_rule": "str",
    "verdict": "str",
    "candidate_sha256": "str",
    "reference_sha256": "str",
    "id": "str",
    # with candidates = K > 1: "candidate" (ranks the K) or "fresh" (the gate's record)
    "selection": "str",
    "candidate_k": "int",
    # the candidate alone (a threshold gate's measures), when the record has them
    "successes": "int",
    "success_rate": "float",
    "mean_return": "float",
}


INT64 = (-(2**63), 2**63 - 1)  # Parquet's int64, the int columns' type in every format


def _typed(value: Any, kind: str) -> Any:
    """``value`` if it has the column's type (an int is a float too), else None: records
    of external evaluators may carry anything, and one odd cell must not sink a column
    (an integer beyond int64, a float that does not fit one). Text is kept as UTF-8 can
    hold it (a non-UTF-8 file name's bytes shown escaped)."""
    if kind == "str":
        return fsio.without_surrogates(value) if isinstance(value, str) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if kind == "int":
        return value if isinstance(value, int) and INT64[0] <= value <= INT64[1] else None
    try:
        number = float(value)
    except OverflowError:  # an integer past 1e308
        return None
    return number if math.isfinite(number) else None


def _pair(value: Any) -> tuple[Any, Any]:
    if isinstance(value, list | tuple) and len(value) == 2:
        return value[0], value[1]
    return None, None


def record_row(record: dict[str, Any]) -> dict[str, Any]:
    """One history record (already validated by ``history.load``) as a row of COLUMNS."""
    # A threshold gate's record may have no head-to-head counts: those cells stay empty.
    wins: int | None = record.get("wins_a")
    losses: int | None = record.get("wins_b")
    draws: int | None = record.get("draws")
    episodes: int = record["episodes"]
    successes = record.get("successes")
    returns = record.get("returns")
    gate: dict[str, Any] = record["gate"] if isinstance(record.get("gate"), dict) else {}
    candidate = record.get("candidate")
    experiment = record.get("curriculum_experiment")
    if not isinstance(experiment, str) and isinstance(candidate, str):
        experiment = Path(candidate).stem
    stage = record.get("stage_index")
    gap_lo, gap_hi = _pair(record.get("gap_ci95"))
    elo_lo, elo_hi = _pair(record.get("elo_ci95"))
    raw = {
        "time": record.get("created_at"),
        "stage": stage + 1 if isinstance(stage, int) and not isinstance(stage, bool) else None,
        "experiment": experiment,
        "attempt": record.get("attempt"),
        "candidate": candidate,
        "reference": record.get("reference"),
        "wins": wins,
        "losses": losses,
        "draws": draws,
        "episodes": episodes,
        # no games means no score rather than the statistics' 0.5 prior
        "score": None
        if wins is None or draws is None
        else scoring.score(wins, draws, episodes, if_none=None),
        "gap": (losses - wins) / episodes
        if episodes and wins is not None and losses is not None
        else None,
        "gap_ci95_lo": gap_lo,
        "gap_ci95_hi": gap_hi,
        "elo": record.get("elo"),
        "elo_ci95_lo": elo_lo,
        "elo_ci95_hi": elo_hi,
        "gate_rule": gate.get("rule"),
        "verdict": gate.get("verdict", record.get("verdict")),
        "candidate_sha256": record.get("candidate_sha256"),
        "reference_sha256": record.get("reference_sha256"),
        "id": record.get("id"),
        "selection": record.get("selection"),
        "candidate_k": record.get("candidate_k"),
        "successes": successes,
        "success_rate": successes / episodes if isinstance(successes, int) and episodes else None,
        "mean_return": math.fsum(returns) / len(returns)
        if isinstance(returns, list) and returns
        else None,
    }
    return {column: _typed(raw[column], kind) for column, kind in COLUMNS.items()}


def rows(history_path: Path) -> list[dict[str, Any]]:
    """Every record of the history file as a row; a missing file is an error here, and
    so is anything but a regular file, named for what it is."""
    path = Path(history_path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise StateError(f"--history {path}: no such file") from None
    except OSError as exc:
        raise StateError(f"--history {path}: {exc.strerror}; name the history file") from None
    # exit 1, as for every history that cannot be read (`evaluate --history` too)
    if stat.S_ISDIR(mode):
        raise StateError(f"--history {path}: is a directory; name the eval_history.json file in it")
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
        raise StateError(
            f"--history {path}: is {kind}, not a regular file; name the eval_history.json file"
        )
    return [record_row(r) for r in history.load(path)]


# A spreadsheet runs a cell that starts with one of these as a formula (OWASP's list,
# with the full-width forms some spreadsheets also read as the ASCII ones).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\0", "＝", "＋", "－", "＠")


def spreadsheet_safe(cell: str) -> str:
    """A text cell a spreadsheet shows as text: one that would start a formula (leading
    spaces aside) gets a leading ``'``, unless it is a plain number such as ``-0.5``."""
    if not cell.lstrip(" ").startswith(FORMULA_STARTS):
        return cell
    try:
        float(cell)
    except ValueError:
        return "'" + cell
    return cell


def to_csv(table: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    for row in table:  # None is written as an empty cell
        writer.writerow(
            {k: spreadsheet_safe(v) if isinstance(v, str) else v for k, v in row.items()}
        )
    return out.getvalue()


def to_jsonl(table: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in table)


def to_parquet(table: list[dict[str, Any]]) -> bytes:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError(
            "--format parquet needs pyarrow: pip install 'cosmic-curriculum[parquet]'"
        ) from None
    types = {"str": pa.string(), "int": pa.int64(), "float": pa.float64()}
    # An explicit schema: a column that is empty in every row still has its type.
    schema = pa.schema([(column, types[kind]) for column, kind in COLUMNS.items()])
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(table, schema=schema), sink)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def export_history(history_path: Path, fmt: str, out: Path | None) -> tuple[int, str | None]:
    """Export the history; returns (rows, text for stdout when ``out`` is None)."""
    if fmt not in FORMATS:
        raise ConfigError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if fmt == "parquet" and out is None:
        raise ConfigError("--format parquet writes a binary file: give --out FILE.parquet")
    if out is not None:
        check_output(out, "--out")
    table = rows(history_path)
    if fmt == "parquet":
        assert out is not None
        write_output(out, to_parquet(table), "--out")
        return len(table), None
    text = to_csv(table) if fmt == "csv" else to_jsonl(table)
    if out is None:
        return len(table), text
    write_output(out, text, "--out")
    return len(table), None
