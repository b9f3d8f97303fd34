"""The round-robin ladder among the shipped bots (inert, random, rookie): ratings, files,
reproducibility and its one-line errors."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.bots import save_bot, simple_bot_document
from cosmic_curriculum.cli import app
from cosmic_curriculum.errors import EvaluationError
from cosmic_curriculum.evaluation.ladder import discover, markdown_table, run_ladder

SHIPPED = Path(__file__).resolve().parent.parent / "bots"
NAMES = ["inert", "random", "rookie"]
PAIRS = 2


def copy_shipped(target: Path) -> Path:
    """A copy of the shipped baseline bots (the repository's bots/ may grow)."""
    target.mkdir(parents=True)
    for name in NAMES:
        shutil.copyfile(SHIPPED / f"{name}.json", target / f"{name}.json")
    return target


@pytest.fixture
def bots_dir(tmp_path: Path) -> Path:
    return copy_shipped(tmp_path / "bots")


@pytest.fixture(scope="module")
def short_game(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bot recording a 10-second game: `game_from` it keeps every ladder short."""
    path = tmp_path_factory.mktemp("game") / "short-game.json"
    save_bot(path, simple_bot_document("inert", game=GameSettings(time_limit=10.0)))
    return path


def ladder(bots_dir: Path, out: Path, game_from: Path, seed: int = 0) -> dict:
    return run_ladder(bots_dir, pairs=PAIRS, out_dir=out, seed=seed, game_from=game_from)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory, short_game: Path) -> tuple[dict, Path]:
    """One ladder of the shipped bots (seed 0) and its output directory, shared."""
    root = tmp_path_factory.mktemp("ladder")
    out = root / "out"
    return ladder(copy_shipped(root / "bots"), out, short_game), out


def test_round_robin_ratings_are_consistent_and_anchored_at_rookie(
    played: tuple[dict, Path],
) -> None:
    doc = played[0]
    assert doc["bots"] == NAMES and doc["anchor"] == "rookie" and doc["skipped"] == []
    assert doc["pairs_per_match"] == PAIRS and doc["game"]["time_limit"] == 10.0
    games, points = np.array(doc["games"]), np.array(doc["points"])
    per_match = 2 * PAIRS  # seat-swapped pairs
    np.testing.assert_array_equal(games, per_match * (1 - np.eye(3)))
    np.testing.assert_allclose(points + points.T, games)  # every game gives out one point
    rows = doc["ratings"]
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert sorted(r["bot"] for r in rows) == NAMES
    elos = [r["elo"] for r in rows]
    assert elos == sorted(elos, reverse=True)
    rookie = next(r for r in rows if r["bot"] == "rookie")
    assert rookie["elo"] == 0.0 and rookie["err95"] == 0.0
    for r in rows:
        i = NAMES.index(r["bot"])
        assert r["games"] == 2 * per_match
        assert r["wins"] + r["losses"] + r["draws"] == r["games"]
        assert r["score"] == pytest.approx(points[i].sum() / r["games"], abs=1e-4)
        assert r["score"] == pytest.approx((r["wins"] + r["draws"] / 2) / r["games"], abs=1e-4)
        if r["bot"] != "rookie":
            assert r["err95"] > 0.0  # a handful of games: a wide but finite error bar
    assert sum(r["wins"] for r in rows) == sum(r["losses"] for r in rows)


def test_writes_json_markdown_and_png(played: tuple[dict, Path]) -> None:
    doc, out = played
    assert doc["files"] == {
        "json": str(out / "ladder.json"),
        "table": str(out / "ladder.md"),
        "png": str(out / "ladder.png"),
    }
    on_disk = json.loads((out / "ladder.json").read_text())
    assert on_disk == {k: v for k, v in doc.items() if k != "files"}
    table = (out / "ladder.md").read_text()
    assert table == markdown_table(on_disk)
    assert f"{PAIRS} seat-swapped pairs per match, seed 0" in table
    assert "Elo relative to rookie" in table
    body = [line for line in table.splitlines() if line.startswith("| ") and "rank" not in line]
    assert [line.split("|")[2].strip() for line in body] == [r["bot"] for r in doc["ratings"]]
    assert (out / "ladder.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_same_seed_gives_the_same_ladder(
    played: tuple[dict, Path], bots_dir: Path, short_game: Path, tmp_path: Path
) -> None:
    first, _ = played
    again = ladder(bots_dir, tmp_path / "again", short_game, seed=0)
    assert {k: v for k, v in again.items() if k != "files"} == {
        k: v for k, v in first.items() if k != "files"
    } | {"ratings": again["ratings"]}  # paths differ: another copy of the bots
    assert [{**r, "path": ""} for r in again["ratings"]] == [
        {**r, "path": ""} for r in first["ratings"]
    ]


def test_without_rookie_ratings_are_relative_to_the_mean(
    bots_dir: Path, short_game: Path, tmp_path: Path
) -> None:
    (bots_dir / "rookie.json").unlink()
    doc = ladder(bots_dir, tmp_path / "out", short_game)
    assert doc["anchor"] is None and doc["bots"] == ["inert", "random"]
    assert sum(r["elo"] for r in doc["ratings"]) == pytest.approx(0.0, abs=0.2)
    assert "Elo relative to the mean" in (tmp_path / "out" / "ladder.md").read_text()


def test_unreadable_bots_are_skipped_with_the_reason(bots_dir: Path, tmp_path: Path) -> None:
    (bots_dir / "broken.json").write_text("{not json")
    (bots_dir / "notes.txt").write_text("not a bot, not even .json")
    good, skipped = discover(bots_dir)
    assert [p.name for p in good] == ["inert.json", "random.json", "rookie.json"]
    assert [p.name for p, _ in skipped] == ["broken.json"]
    assert "broken.json" in skipped[0][1]


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [({"pairs": 0}, "--pairs 0"), ({"seed": -1}, "--seed -1")],
)
def test_bad_options_are_refused_before_any_game(
    bots_dir: Path, tmp_path: Path, kwargs: dict, needle: str
) -> None:
    out = tmp_path / "out"
    with pytest.raises(EvaluationError, match=needle) as info:
        run_ladder(bots_dir, out_dir=out, **kwargs)
    assert "\n" not in str(info.value)
    assert not out.exists()


def test_too_few_bots_and_a_missing_directory_are_errors(bots_dir: Path, tmp_path: Path) -> None:
    for name in ("inert", "random"):
        (bots_dir / f"{name}.json").unlink()
    (bots_dir / "broken.json").write_text("[]")
    with pytest.raises(EvaluationError, match=r"at least 2 loadable bot files, found 1 \(1 "):
        run_ladder(bots_dir, pairs=1, out_dir=tmp_path / "out")
    with pytest.raises(EvaluationError, match="not a directory"):
        run_ladder(tmp_path / "nowhere", pairs=1, out_dir=tmp_path / "out")


def test_cli_ladder_prints_the_table_and_fails_in_one_line(
    bots_dir: Path, short_game: Path, tmp_path: Path
) -> None:
    runner = CliRunner()
    out = tmp_path / "out"
    argv = ["ladder", "--bots-dir", str(bots_dir), "--out-dir", str(out), "--pairs", "1"]
    result = runner.invoke(app, [*argv, "--game-from", str(short_game)])
    assert result.exit_code == 0, result.output
    assert "Ladder: Elo relative to rookie, 1 pairs per match" in result.output
    for name in NAMES:
        assert name in result.output
    assert "wrote" in result.output and (out / "ladder.json").is_file()
    bad = runner.invoke(app, [*argv[:-1], "0"])
    assert bad.exit_code == 1
    assert bad.output.strip().splitlines() == [bad.output.strip()]
    assert bad.output.startswith("error: --pairs 0")


@pytest.mark.slow
def test_a_bot_file_name_that_is_not_utf8_is_laddered_and_shown_escaped(
    tmp_path: Path, short_game: Path
) -> None:
    """A file name of bytes that are not UTF-8 reaches Python as a lone surrogate; the
    ladder plays it and writes every file, the name shown with its byte escaped."""
    bots = copy_shipped(tmp_path / "bots")
    odd = Path(os.fsdecode(bytes(bots) + b"/r\xffk.json"))
    shutil.copyfile(bots / "rookie.json", odd)
    out = tmp_path / "out"
    argv = ["ladder", "--bots-dir", str(bots), "--pairs", "1", "--out-dir", str(out)]
    result = CliRunner().invoke(app, [*argv, "--game-from", str(short_game)])
    assert result.exit_code == 0, result.output
    written = (out / "ladder.json").read_text(encoding="utf-8")
    assert "\\udc" not in written and "r\\\\xffk" in written
    assert "r\\xffk" in json.loads(written)["bots"]
    assert "| r\\xffk |" in (out / "ladder.md").read_text(encoding="utf-8")
    assert "r\\xffk" in result.output
