"""`history export`: every format opens in pandas with the columns people plot."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from cosmic_curriculum.cli import app
from cosmic_curriculum.reports.history_table import COLUMNS

FULL = {
    "wins_a": 30,
    "wins_b": 50,
    "draws": 20,
    "episodes": 100,
    "id": "ev-20250101T000000-abcdef",
    "created_at": "2025-01-01T00:00:00+00:00",
    "candidate": "bots/curric-s2-defend-retry1.json",
    "reference": "bots/curric-s1-score.json",
    "candidate_sha256": "a" * 64,
    "reference_sha256": "b" * 64,
    "gap_ci95": [0.05, 0.35],
    "elo": -70.4,
    "elo_ci95": [-140.0, -5.5],
    "gate": {"verdict": "fail", "rule": "margin", "summary": "s", "stats": {}},
    "curriculum_experiment": "curric-s2-defend-retry1",
    "stage_index": 1,
    "attempt": 1,
    "selection": "candidate",
    "candidate_k": 2,
}
SEED = {"wins_a": 3, "wins_b": 1, "draws": 0, "episodes": 4}  # the seed's minimal record
NO_GAMES = {"wins_a": 0, "wins_b": 0, "draws": 0, "episodes": 0, "candidate": "x/y.json"}


@pytest.fixture
def history(tmp_path: Path) -> Path:
    path = tmp_path / "eval_history.json"
    path.write_text(json.dumps([FULL, SEED, NO_GAMES]))
    return path


def export(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["history", "export", *args])
    return result.exit_code, result.stdout, result.stderr


def check_frame(df: pd.DataFrame) -> None:
    assert list(df.columns) == list(COLUMNS)
    assert len(df) == 3
    full, seed, empty = df.iloc[0], df.iloc[1], df.iloc[2]
    assert full["time"] == "2025-01-01T00:00:00+00:00"
    assert full["stage"] == 2 and full["attempt"] == 1
    assert full["experiment"] == "curric-s2-defend-retry1"
    assert (full["wins"], full["losses"], full["draws"], full["episodes"]) == (30, 50, 20, 100)
    assert full["score"] == pytest.approx(0.4) and full["gap"] == pytest.approx(0.2)
    # pandas' JSON reader parses floats to within an ulp or so
    assert [full["gap_ci95_lo"], full["gap_ci95_hi"]] == pytest.approx([0.05, 0.35])
    elo = [full["elo"], full["elo_ci95_lo"], full["elo_ci95_hi"]]
    assert elo == pytest.approx([-70.4, -140.0, -5.5])
    assert (full["gate_rule"], full["verdict"]) == ("margin", "fail")
    assert full["candidate_sha256"] == "a" * 64 and full["reference_sha256"] == "b" * 64
    assert full["id"] == FULL["id"]
    assert (full["selection"], full["candidate_k"]) == ("candidate", 2)
    # the seed's record: counts, and score and gap computed from them; the rest empty
    assert (seed["wins"], seed["losses"], seed["draws"], seed["episodes"]) == (3, 1, 0, 4)
    assert seed["score"] == pytest.approx(0.75) and seed["gap"] == pytest.approx(-0.5)
    for column in (
        "time",
        "stage",
        "experiment",
        "elo",
        "gap_ci95_lo",
        "verdict",
        "id",
        "selection",
    ):
        assert pd.isna(seed[column]), column
    # no games: no score rather than a made-up 0.5; the candidate's stem names it
    assert pd.isna(empty["score"]) and pd.isna(empty["gap"]) and empty["experiment"] == "y"


def test_csv_to_stdout_opens_in_pandas(history: Path) -> None:
    code, out, _ = export("--history", str(history))
    assert code == 0
    check_frame(pd.read_csv(io.StringIO(out)))


def test_jsonl_opens_in_pandas(history: Path, tmp_path: Path) -> None:
    code, out, _ = export("--history", str(history), "--format", "jsonl")
    assert code == 0 and len(out.splitlines()) == 3
    check_frame(pd.read_json(io.StringIO(out), lines=True))
    target = tmp_path / "h.jsonl"
    code, out, err = export("--history", str(history), "--format", "jsonl", "--out", str(target))
    assert code == 0 and out == "" and "wrote 3 rows" in err
    check_frame(pd.read_json(target, lines=True))


def test_parquet_opens_in_pandas_with_typed_columns(history: Path, tmp_path: Path) -> None:
    target = tmp_path / "h.parquet"
    code, _, _ = export("--history", str(history), "--format", "parquet", "--out", str(target))
    assert code == 0
    df = pd.read_parquet(target)
    check_frame(df)
    assert str(df["wins"].dtype) == "int64" and str(df["score"].dtype) == "float64"


def test_an_empty_history_still_has_every_column(tmp_path: Path) -> None:
    path = tmp_path / "eval_history.json"
    path.write_text("[]")
    code, out, _ = export("--history", str(path))
    assert code == 0 and out.strip() == ",".join(COLUMNS)
    target = tmp_path / "h.parquet"
    assert export("--history", str(path), "--format", "parquet", "--out", str(target))[0] == 0
    assert list(pd.read_parquet(target).columns) == list(COLUMNS)


def test_odd_values_of_foreign_records_become_empty_cells(tmp_path: Path) -> None:
    path = tmp_path / "eval_history.json"
    odd = {**SEED, "elo": "high", "stage_index": True, "attempt": 1.5, "gap_ci95": [0.1]}
    path.write_text(json.dumps([odd]))
    code, out, _ = export("--history", str(path), "--format", "jsonl")
    assert code == 0
    row = json.loads(out)
    assert row["elo"] is None and row["stage"] is None and row["attempt"] is None
    assert row["gap_ci95_lo"] is None and row["score"] == 0.75


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--format", "xlsx"], 2, "--format 'xlsx': choose one of csv, jsonl, parquet"),
        (["--format", "parquet"], 2, "--format parquet writes a binary file: give --out"),
        (["--out", "nowhere/h.csv"], 2, "--out nowhere/h.csv: directory nowhere does not exist"),
    ],
)
def test_bad_options_are_one_line_errors(
    history: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], code: int, message: str
) -> None:
    monkeypatch.chdir(history.parent)
    got, _, err = export("--history", str(history), *args)
    assert got == code and err.startswith("error: ") and message in err
    assert len(err.strip().splitlines()) == 1


def test_bad_history_files_are_one_line_errors(tmp_path: Path) -> None:
    code, _, err = export("--history", str(tmp_path / "missing.json"))
    assert code == 1 and "missing.json: no such file" in err
    broken = tmp_path / "broken.json"
    broken.write_text('[{"wins_a": 1}]')
    code, _, err = export("--history", str(broken))
    assert code == 1 and "'wins_b' must be a non-negative integer" in err
    assert len(err.strip().splitlines()) == 1


def test_a_threshold_record_without_an_opponent_exports_its_own_measures() -> None:
    from cosmic_curriculum.reports.history_table import record_row

    alone = record_row({"episodes": 20, "successes": 18, "returns": [1.0] * 18 + [0.0] * 2})
    assert (alone["wins"], alone["losses"], alone["draws"], alone["score"]) == (None,) * 4
    assert (alone["successes"], alone["success_rate"], alone["mean_return"]) == (18, 0.9, 0.9)
    assert record_row(SEED)["successes"] is None and record_row(SEED)["score"] == 0.75
