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


# --- records as other programs and older versions left them on disk ---------------------

# A non-UTF-8 file name as Python reads it (b"r\xffk.json": a lone surrogate), and the
# JSON escape an older version or another program wrote for it.
SURROGATE = {**SEED, "candidate": "bots/r\udcffk.json", "reference": "exec:./b\ud800 x"}


def test_non_utf8_names_already_on_disk_export_in_every_format(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    path = tmp_path / "eval_history.json"
    path.write_text(json.dumps([SURROGATE]))  # ensure_ascii: "\udcff" in the file
    assert "\\udcff" in path.read_text()
    for fmt in ("csv", "jsonl", "parquet"):
        target = tmp_path / f"h.{fmt}"
        code, _, err = export("--history", str(path), "--format", fmt, "--out", str(target))
        assert code == 0, err
        frame = (
            pd.read_parquet(target)
            if fmt == "parquet"
            else pd.read_json(target, lines=True)
            if fmt == "jsonl"
            else pd.read_csv(target)
        )
        assert frame["candidate"][0] == "bots/r\\xffk.json", fmt  # the byte, shown escaped
        assert frame["reference"][0] == "exec:./b\\ud800 x" and frame["experiment"][0] == "r\\xffk"
    # and to a stdout that takes only UTF-8, as a UTF-8 locale's does
    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict", "PYTHONPATH": str(repo)}
    for fmt in ("csv", "jsonl"):
        argv = [sys.executable, "-m", "cosmic_curriculum", "history", "export"]
        done = subprocess.run(
            [*argv, "--history", str(path), "--format", fmt],
            capture_output=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        text = done.stdout.decode("utf-8")
        shown = json.loads(text)["candidate"] if fmt == "jsonl" else text
        assert "bots/r\\xffk.json" in shown  # the byte shown as \xff


def test_integers_beyond_int64_leave_an_empty_cell_not_a_crash(tmp_path: Path) -> None:
    """An external evaluator's record may carry any integer JSON allows (up to the reader's
    40 digits): beyond int64 it is an empty cell in every format, its column kept."""
    path = tmp_path / "eval_history.json"
    big = {**SEED, "attempt": 2**63, "stage_index": -(2**63) - 2, "candidate_k": 10**39}
    big |= {"elo": 10**39, "gap_ci95": [-(10**30), 2**64]}
    path.write_text(json.dumps([big, {**SEED, "attempt": 2**63 - 1}]))
    target = tmp_path / "h.parquet"
    code, _, err = export("--history", str(path), "--format", "parquet", "--out", str(target))
    assert code == 0, err
    df = pd.read_parquet(target)
    assert str(df["attempt"].dtype) == "Int64" or str(df["attempt"].dtype) == "float64"
    assert pd.isna(df["attempt"][0]) and df["attempt"][1] == 2**63 - 1
    assert pd.isna(df["stage"][0]) and pd.isna(df["candidate_k"][0])
    assert df["elo"][0] == pytest.approx(1e39) and df["gap_ci95_hi"][0] == pytest.approx(2.0**64)
    assert df["wins"][0] == 3  # the rest of the row is there
    code, out, _ = export("--history", str(path), "--format", "jsonl")
    assert code == 0 and json.loads(out.splitlines()[0])["attempt"] is None


def test_a_float_column_takes_no_integer_too_large_for_a_float() -> None:
    from cosmic_curriculum.reports.history_table import _typed

    assert _typed(10**400, "float") is None and _typed(10**400, "int") is None
    assert _typed(2**63 - 1, "int") == 2**63 - 1 and _typed(-(2**63), "int") == -(2**63)
    assert _typed(-(2**63) - 1, "int") is None and _typed(5, "float") == 5.0


@pytest.mark.parametrize(
    ("cell", "written"),
    [
        ('=HYPERLINK("http://x","y")', '\'=HYPERLINK("http://x","y")'),
        ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
        ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"),
        ("@SUM(1+1)", "'@SUM(1+1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("  =1", "'  =1"),  # leading spaces do not hide a formula
        ("＝1+1", "'＝1+1"),  # full-width equals
        ("-0.5", "-0.5"),  # a number stays a number
        ("+3", "+3"),
        ("bots/a.json", "bots/a.json"),
        ("a=b", "a=b"),
        ("", ""),
    ],
)
def test_spreadsheet_formula_cells_are_neutralised(cell: str, written: str) -> None:
    from cosmic_curriculum.reports.history_table import spreadsheet_safe

    assert spreadsheet_safe(cell) == written


def test_a_csv_export_carries_no_live_formula(tmp_path: Path) -> None:
    import csv

    path = tmp_path / "eval_history.json"
    hostile = {
        **FULL,
        "candidate": "=cmd|' /C calc'!A0.json",  # a bot file so named, given as is
        "reference": "@SUM(A1:A9)",
        "curriculum_experiment": "-1+cmd",
        "gate": {"verdict": "+fail", "rule": "=rule"},
        "id": "\tid",
        "selection": "-0.25",
    }
    path.write_text(json.dumps([hostile]))
    code, out, _ = export("--history", str(path))
    assert code == 0
    row = next(csv.DictReader(io.StringIO(out)))
    for column in ("candidate", "reference", "experiment", "verdict", "gate_rule", "id"):
        assert row[column].startswith("'"), (column, row[column])
    assert row["selection"] == "-0.25" and row["gap"] == "0.2" and row["elo"] == "-70.4"
    code, out, _ = export("--history", str(path), "--format", "jsonl")  # JSON is data: as is
    assert json.loads(out)["reference"] == "@SUM(A1:A9)"
