"""`ladder` and the other commands taking counts (issue 27): bounded memory at any
`--pairs`, a refusal where a count cannot be bounded otherwise, and ladder names for
programs that share one interpreter. Each test failed before its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.bots import ExecSpec, save_bot, simple_bot_document
from cosmic_curriculum.cli import app
from cosmic_curriculum.errors import EvaluationError
from cosmic_curriculum.evaluation import ladder
from cosmic_curriculum.evaluation.evaluate import batch_seed

ROOT = Path(__file__).resolve().parents[2]
TINY = GameSettings(tick=0.1, decision_ticks=1, time_limit=0.1)  # one tick a game
BOT = (
    "import json, sys\n"
    "print(json.dumps({'protocol': 'cosmic-bot/1', 'observation_size': 43, "
    "'action_size': 6, 'decision_ticks': 1}), flush=True)\n"
    "for line in sys.stdin:\n"
    "    n = len(json.loads(line)['obs'])\n"
    "    print(json.dumps({'actions': [[SPEED, 0, 0, 0, 0, 0]] * n}), flush=True)\n"
)


@pytest.fixture
def bots_dir(tmp_path: Path) -> Path:
    path = tmp_path / "bots"
    path.mkdir()
    for kind in ("inert", "random"):
        save_bot(path / f"{kind}.json", simple_bot_document(kind, decision_ticks=1, game=TINY))
    return path


MEASURE = """
import json, sys
from pathlib import Path
from cosmic_curriculum.evaluation.ladder import run_ladder
bots, out, pairs = sys.argv[1:]
game = Path(bots) / "inert.json"
doc = run_ladder(Path(bots), pairs=int(pairs), out_dir=Path(out), game_from=game)
status = Path("/proc/self/status").read_text().splitlines()
peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
print(json.dumps({"peak_mb": peak, "games": doc["games"]}))
"""


@pytest.mark.slow  # about 10 s: 600,000 one-tick games
def test_a_huge_pairs_count_plays_in_batches_with_bounded_memory(
    bots_dir: Path, tmp_path: Path
) -> None:
    """`ladder --pairs 10000000` allocated 3 GB: every match was one batch (evaluate's
    version of this was fixed by batches of MAX_BATCH_PAIRS)."""
    pairs = 300_000  # one batch of 300,000 pairs took about 1.2 GB
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(bots_dir), str(tmp_path), str(pairs)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["games"] == [[0, 2 * pairs], [2 * pairs, 0]] and out["peak_mb"] < 300, out


@pytest.mark.slow  # about 5 s: the first ladder of a process draws with matplotlib
def test_batched_matches_keep_small_ladders_unchanged(
    bots_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert ladder.match_seed(7, 3, 0) == batch_seed(7, 3)  # batch 0: the match's old seed
    seeds = {ladder.match_seed(7, m, b) for m in range(3) for b in range(3)}
    assert len(seeds) == 9
    monkeypatch.setattr(ladder, "MAX_BATCH_PAIRS", 4)
    game = bots_dir / "inert.json"
    doc = ladder.run_ladder(bots_dir, pairs=10, out_dir=tmp_path, game_from=game)
    assert doc["games"][0][1] == 20  # batches of 4, 4 and 2 pairs
    assert doc == ladder.run_ladder(bots_dir, pairs=10, out_dir=tmp_path, game_from=game)


def test_programs_sharing_an_interpreter_get_their_command_lines_as_names(
    bots_dir: Path, tmp_path: Path
) -> None:
    """`exec:python3 a.py` and `exec:python3 b.py` were both 'python3': "rename one of
    them", which an argv cannot do."""
    for name, speed in (("a.py", 0.5), ("b.py", 1.0)):
        (tmp_path / name).write_text(BOT.replace("SPEED", str(speed)))
    players = [ExecSpec((sys.executable, str(tmp_path / n)), 10.0) for n in ("a.py", "b.py")]
    doc = ladder.run_ladder(
        bots_dir, pairs=1, out_dir=tmp_path, game_from=bots_dir / "inert.json", players=players
    )
    assert doc["bots"] == ["inert", "random", *(str(p).removeprefix("exec:") for p in players)]


@pytest.mark.parametrize(
    ("sources", "said", "names"),
    [
        # a file's stem; a program's handshake name, else its program's stem
        ([("r", "bots/r.json", False), ("x", "exec:./x", True)], ["", "chaser"], ["r", "chaser"]),
        # one program at two levels, one interpreter for two scripts
        (
            [("bot", "exec:./bot -l 1", True), ("bot", "exec:./bot -l 2", True)],
            ["Bot", "Bot"],
            ["./bot -l 1", "./bot -l 2"],
        ),
        (
            [("python3", "exec:python3 a.py", True), ("python3", "exec:python3 b.py", True)],
            ["", ""],
            ["python3 a.py", "python3 b.py"],
        ),
        # a program never takes a file's name, nor the anchor's
        ([("x", "exec:./x", True), ("r", "r.json", False)], ["r", ""], ["./x", "r"]),
        ([("x", "exec:./x", True)], ["rookie"], ["./x"]),
        # two files of one stem (a --bot from elsewhere): their paths
        ([("r", "a/r.json", False), ("r", "b/r.json", False)], ["", ""], ["a/r.json", "b/r.json"]),
    ],
)
def test_ladder_names(
    sources: list[tuple[str, str, bool]], said: list[str], names: list[str]
) -> None:
    assert ladder.ladder_names(sources, said) == names


def test_the_same_bot_twice_is_refused() -> None:
    with pytest.raises(EvaluationError, match=r"ladder bot './x' is given twice"):
        ladder.ladder_names([("x", "exec:./x", True)] * 2, ["", ""])


@pytest.mark.parametrize("trials", ["100000000", "1000001", "0"])
def test_gate_simulate_refuses_trials_it_cannot_hold(trials: str) -> None:
    """`--trials 100000000` ended in a numpy MemoryError traceback."""
    result = CliRunner().invoke(app, ["gate", "simulate", "--trials", trials])
    assert result.exit_code == 2
    assert result.output.startswith(f"error: --trials {trials}: must be between 1 and 1,000,000")


def test_env_evaluations_and_ladders_refuse_counts_they_cannot_hold(tmp_path: Path) -> None:
    """An env record keeps every episode's seed and return: 10,000,000 episodes held GBs
    of Python objects before the first game."""
    from cosmic_curriculum.envs.evaluate import MAX_ENV_EPISODES, evaluate_env
    from cosmic_curriculum.envs.ladder import env_round_robin

    huge = MAX_ENV_EPISODES + 1
    with pytest.raises(EvaluationError, match=rf"episodes {huge}: at most 100,000 episodes"):
        evaluate_env(tmp_path / "none.json", "random", history_path=tmp_path / "h.json",
                     episodes=huge, seed=0)  # fmt: skip
    with pytest.raises(EvaluationError, match=rf"--pairs {huge}: at most 100,000 episodes"):
        env_round_robin(tmp_path, pairs=huge, seed=0)
