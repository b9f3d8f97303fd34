"""The seat-swapped game evaluator (envs/game_evaluate.py) and `evaluate` of game bots on
real PettingZoo games: counts and seeds, perfect play never losing, seeded replays; and
each bad input one line with no record: an illegal move from a JSON bot, its ONNX twin and
search:N, a masked bot on a game without a mask, a game that never ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from cosmic_curriculum.envs.game_evaluate import evaluate_game
from cosmic_curriculum.envs.game_players import RandomGamePlayer
from cosmic_curriculum.envs.game_search import SearchPlayer
from cosmic_curriculum.envs.game_table import GameTable
from cosmic_curriculum.envs.onnx_twin import write_env_twin
from cosmic_curriculum.envs.pettingzoo import game_info
from cosmic_curriculum.envs.policy import EnvBot, save_env_bot
from cosmic_curriculum.errors import EvaluationError
from cosmic_curriculum.workspace import history
from cosmic_curriculum.workspace.env_config import EnvSpec
from tests.envs.game_helpers import TICTACTOE, random_game_bot

ENDLESS = EnvSpec(kind="pettingzoo", id="tests.envs.fake_games", kwargs={"fault": "endless"})
STUCK = EnvSpec(kind="pettingzoo", id="tests.envs.fake_games", kwargs={"fault": "stuck"})
REPO = Path(__file__).resolve().parents[2]


def bot_file(tmp_path: Path, name: str, bot: EnvBot) -> Path:
    path = tmp_path / f"{name}.json"
    save_env_bot(bot, path)
    return path


def unmasked(bot: EnvBot) -> EnvBot:
    return EnvBot(bot.env, bot.observation_space, bot.action_space, bot.layers)


def test_counts_seeds_and_perfect_play(tmp_path: Path) -> None:
    bot = bot_file(tmp_path, "bot", random_game_bot(TICTACTOE, seed=1))
    other = bot_file(tmp_path, "other", random_game_bot(TICTACTOE, seed=2))
    hist = tmp_path / "h.json"
    record = evaluate_game(bot, "random", history_path=hist, episodes=20, seed=5,
                           deterministic=False)  # fmt: skip
    assert record["wins_a"] + record["wins_b"] + record["draws"] == record["episodes"] == 20
    assert len(record["pairs"]) == len(record["seeds"]) == 10 and record["cut_games"] == 0
    assert record["reference"] == "random" and record["evaluator"] == "game"
    again = evaluate_game(bot, "random", history_path=hist, episodes=20, seed=5,
                          deterministic=False)  # fmt: skip
    assert again["pairs"] == record["pairs"] and again["seeds"] == record["seeds"]
    fresh = evaluate_game(bot, "random", history_path=hist, episodes=20, seed=6,
                          deterministic=False)  # fmt: skip
    assert fresh["seeds"] != record["seeds"]
    # full-depth search is perfect play: a sampling bot never beats it, in either seat
    perfect = evaluate_game(bot, "search:9", history_path=hist, episodes=8, seed=5,
                            deterministic=False)  # fmt: skip
    assert perfect["wins_a"] == 0 and perfect["reference"] == "search:9"
    head = evaluate_game(bot, other, history_path=hist, episodes=4, seed=5, deterministic=True)
    assert head["reference"] == str(other) and len(head["reference_sha256"]) == 64
    # two greedy bots replay one game per seat order: each pair is the same two games
    assert len({tuple(p) for p in head["pairs"]}) == 1
    assert len(history.load(hist)) == 5


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "cosmic_curriculum", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_evaluate_plays_game_bots_against_random_search_and_a_bot(tmp_path: Path) -> None:
    bot_file(tmp_path, "bot", random_game_bot(TICTACTOE, seed=1))
    bot_file(tmp_path, "other", random_game_bot(TICTACTOE, seed=2))
    for reference in ("random", "search:2", "other.json"):
        done = cli(tmp_path, "evaluate", "bot.json", reference, "-n", "6", "--seed", "3")
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"bot.json vs {reference}: " in done.stdout and "in 6 games (3" in done.stdout
    done = cli(tmp_path, "evaluate", "bot.json", "search:4", "--gate", "sprt", "-n", "40")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "; gate " in done.stdout
    records = history.load(tmp_path / "eval_history.json")
    assert [r["reference"] for r in records] == ["random", "search:2", "other.json", "search:4"]
    assert records[-1]["gate"]["settings"]["rule"] == "sprt"
    # bad input from the command line: one line, no traceback, no record
    (tmp_path / "plain.json").write_text((tmp_path / "bot.json").read_text())
    bot_file(tmp_path, "loose", unmasked(random_game_bot(TICTACTOE, seed=1)))
    for reference, expected in (("search:0", "the depth must be 1 to"),
                                ("search:x", "the depth must be 1 to"),
                                ("exec:python3 no_such_bot.py", "no_such_bot.py"),
                                ("random", "played the illegal move")):  # fmt: skip
        candidate = "loose.json" if expected.startswith("played") else "bot.json"
        done = cli(tmp_path, "evaluate", candidate, reference, "-n", "8")
        assert done.returncode != 0 and expected in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert len(history.load(tmp_path / "eval_history.json")) == 4


@pytest.mark.parametrize("twin", [False, True])
def test_an_illegal_move_of_a_bot_or_its_onnx_twin_is_one_line(tmp_path: Path, twin: bool) -> None:
    # an unmasked bot of a masked game plays its best logit, legal or not
    path = bot_file(tmp_path, "loose", unmasked(random_game_bot(TICTACTOE, seed=1)))
    candidate = write_env_twin(path) if twin else path
    hist = tmp_path / "h.json"
    with pytest.raises(EvaluationError) as caught:
        evaluate_game(candidate, "random", history_path=hist, episodes=20, seed=0,
                      deterministic=True)  # fmt: skip
    message = str(caught.value)
    assert f"{candidate} played the illegal move" in message and "\n" not in message
    assert "the legal moves were [" in message and message.endswith("fix the bot")
    assert not hist.exists()


def test_an_illegal_move_of_search_is_one_line() -> None:
    # the stuck game leaves no legal move while it goes on: the search has none to play
    info = game_info(STUCK)
    table = GameTable(STUCK, info, 1, 100)
    players = (SearchPlayer(info, 2, seed=0), RandomGamePlayer(2, seed=0))
    rngs = (np.random.default_rng(0), np.random.default_rng(1))
    with pytest.raises(EvaluationError) as caught:
        table.play(players, ("search:2", "random"), [0], [0], False, rngs)
    table.close()
    message = str(caught.value)
    assert message.startswith("search:2 played the illegal move 0") and "\n" not in message
    assert "(game seed 0, move 3); the legal moves were []" in message


def test_a_game_that_never_ends_is_one_line(tmp_path: Path) -> None:
    path = bot_file(tmp_path, "bot", random_game_bot(ENDLESS, seed=0))
    hist = tmp_path / "h.json"
    with pytest.raises(EvaluationError) as caught:
        evaluate_game(path, "random", history_path=hist, episodes=4, seed=0,
                      deterministic=False, max_moves=50)  # fmt: skip
    message = str(caught.value)
    assert "all 4 games of the first batch reached the move cap of 50 moves" in message
    assert "\n" not in message and not hist.exists()


def test_a_game_that_keeps_its_agents_after_it_ended_is_one_line(tmp_path: Path) -> None:
    undying = EnvSpec(kind="pettingzoo", id="tests.envs.fake_games", kwargs={"fault": "undying"})
    path = bot_file(tmp_path, "bot", random_game_bot(undying, seed=0))
    hist = tmp_path / "h.json"
    with pytest.raises(EvaluationError) as caught:  # it was stepped with None forever
        evaluate_game(path, "random", history_path=hist, episodes=4, seed=0,
                      deterministic=False)  # fmt: skip
    message = str(caught.value)
    assert "kept its agents after it ended (2 steps with None" in message
    assert "_was_dead_step" in message and "\n" not in message and not hist.exists()


def test_a_masked_bot_needs_a_masked_game(tmp_path: Path) -> None:
    plain = random_game_bot(ENDLESS, seed=0)
    masked = EnvBot(plain.env, plain.observation_space, plain.action_space, plain.layers,
                    action_mask=True)  # fmt: skip
    path = bot_file(tmp_path, "masked", masked)
    fine = bot_file(tmp_path, "plain", plain)
    hist = tmp_path / "h.json"
    for candidate, reference in ((path, "random"), (fine, path)):
        with pytest.raises(EvaluationError) as caught:
            evaluate_game(candidate, reference, history_path=hist, episodes=2, seed=0,
                          deterministic=False)  # fmt: skip
        message = str(caught.value)
        assert message.startswith(f"{path}: a masked bot (action_mask: true), but its game")
        assert "gives no action mask" in message and "\n" not in message
    assert not hist.exists()


@pytest.mark.slow
def test_a_game_that_shows_a_dict_trains_and_its_bot_plays_every_reference(
    tmp_path: Path,
) -> None:
    # Its bot reads the Dict as the env bot does; the evaluator once refused it after the
    # training had run ("env bots hold Discrete or Box spaces").
    game = EnvSpec(kind="pettingzoo", id="tests.envs.dict_game").to_argument()
    (tmp_path / "bots").mkdir()
    args = ["--env", game, "--timesteps", "256", "--n-envs", "2", "--seed", "0"]
    done = cli(tmp_path, "train-env", "d", *args, "--opponent-mode", "random")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PPO MultiInputPolicy" in done.stdout
    assert (tmp_path / "bots/d.onnx").is_file()  # an unmasked game bot gets its twin
    for candidate, reference in (
        ("bots/d.json", "random"),
        ("bots/d.json", "search:3"),
        ("bots/d.json", "bots/d.json"),
        ("bots/d.onnx", "bots/d.json"),
    ):
        done = cli(tmp_path, "evaluate", candidate, reference, "-n", "6", "--seed", "3")
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"vs {reference}: " in done.stdout and "in 6 games (3" in done.stdout
    league = ["--opponent-mode", "pool", "--snapshot-every", "64", "--league-bot", "bots/d.json"]
    done = cli(tmp_path, "train-env", "e", *args, *league)
    assert done.returncode == 0, done.stdout + done.stderr
    table = json.loads((tmp_path / "checkpoints/e/final.league.json").read_text())["table"]
    assert sum(table["bots/d.json"]) > 0  # the league played the bot
