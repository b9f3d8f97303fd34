"""`replay` of a game's bot (envs/game_replay.py): one game in the first seat against a
reference, drawn from the game's rgb_array frames, the outcome in the title; what it
cannot draw is one line."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pettingzoo")

from PIL import Image

from cosmic_curriculum.envs.policy import save_env_bot
from cosmic_curriculum.workspace.env_config import EnvSpec
from tests.envs.env_helpers import cli
from tests.envs.game_helpers import CONNECT_FOUR, TICTACTOE, random_game_bot

BLIND = EnvSpec(kind="pettingzoo", id="tests.envs.fake_games")  # it renders nothing


def test_a_game_bot_is_drawn_against_each_kind_of_reference(tmp_path: Path) -> None:
    save_env_bot(random_game_bot(CONNECT_FOUR, seed=1), tmp_path / "bot.json")
    save_env_bot(random_game_bot(CONNECT_FOUR, seed=2), tmp_path / "other.json")
    titles = []
    for reference, out in (("search:2", "a.png"), ("other.json", "b.gif"), ("random", "c.png")):
        done = cli(tmp_path, "replay", "bot.json", reference, "--out", out, "--seed", "4")
        assert done.returncode == 0, done.stdout + done.stderr
        line = done.stdout.strip()
        game = "pettingzoo.classic.connect_four_v3"
        assert line.startswith(f"{game}: bot.json (first) vs {reference}")
        assert line.endswith(f"; wrote {out}") and " moves" in line
        titles.append(line)
        with Image.open(tmp_path / out) as picture:
            assert picture.width > 200 and picture.height > 100
    # search:2 takes every win the random-weight bot leaves it
    assert "search:2 won" in titles[0] or "the bot won" in titles[0]
    again = cli(tmp_path, "replay", "bot.json", "search:2", "--out", "d.png", "--seed", "4")
    assert again.stdout.replace("d.png", "a.png") == titles[0] + "\n"  # the seed's own game


def test_what_replay_cannot_draw_is_one_line(tmp_path: Path) -> None:
    save_env_bot(random_game_bot(CONNECT_FOUR, seed=1), tmp_path / "bot.json")
    save_env_bot(random_game_bot(TICTACTOE, seed=1), tmp_path / "ttt.json")
    save_env_bot(random_game_bot(BLIND, seed=1), tmp_path / "blind.json")
    for args, expected in (
        (["bot.json"], "a game's bot needs REFERENCE, the other player"),
        (["bot.json", "search:0"], "the depth must be 1 to"),
        (["bot.json", "ttt.json"], "ttt.json: its observation_space is not the candidate's"),
        (["blind.json", "random"], "has no rgb_array render"),
        (["bot.json", "random", "--out", "x.txt"], "name the picture .gif or .png"),
    ):
        out = [] if "--out" in args else ["--out", "x.png"]
        done = cli(tmp_path, "replay", *args, *out)
        assert done.returncode != 0 and expected in done.stderr, done.stdout + done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.png").exists() and not (tmp_path / "x.txt").exists()
