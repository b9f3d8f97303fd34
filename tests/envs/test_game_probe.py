"""What search:N sees that a player does not (envs/game_probe.py), on real PettingZoo
games and a card game of the tests' own: perfect-information games pass clean; chance and
moves shown only after both seats moved are each named; `evaluate BOT search:N` and a
training against a search say so, in one line, and the record keeps it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pettingzoo")

from cosmic_curriculum.envs.game_probe import CHANCE, HIDDEN_MOVES, search_note, search_sees
from cosmic_curriculum.envs.pettingzoo import game_info
from cosmic_curriculum.envs.policy import save_env_bot
from cosmic_curriculum.workspace import history
from cosmic_curriculum.workspace.env_config import EnvSpec
from tests.envs.env_helpers import bare_workspace, cli
from tests.envs.game_helpers import CONNECT_FOUR, RPS, TICTACTOE, random_game_bot

CARDS = EnvSpec(kind="pettingzoo", id="tests.envs.card_game")
OPEN_CARDS = EnvSpec(kind="pettingzoo", id="tests.envs.card_game", kwargs={"open": True})
GO = EnvSpec(kind="pettingzoo", id="pettingzoo.classic.go_v5", kwargs={"board_size": 5})


@pytest.mark.parametrize(
    ("spec", "seen"),
    [
        (TICTACTOE, ()),
        (CONNECT_FOUR, ()),
        (GO, ()),  # a pass shows nothing new, its other moves do
        (RPS, (HIDDEN_MOVES,)),  # the first seat's move is shown once both moved
        (OPEN_CARDS, (CHANCE,)),  # dealt from the seed, both hands in view
        (CARDS, (CHANCE, HIDDEN_MOVES)),  # and a swap the other seat cannot see
    ],
)
def test_what_the_search_sees_that_a_player_does_not(spec: EnvSpec, seen: tuple[str, ...]) -> None:
    assert search_sees(spec, game_info(spec)) == seen


def test_the_note_names_each_reason_and_only_when_there_is_one() -> None:
    assert search_note("search:2", ()) is None
    note = search_note("search:2", (CHANCE, HIDDEN_MOVES))
    assert note is not None and note.startswith("search:2 sees more than a player")
    assert "foresees the draws" in note and "until both have moved" in note
    assert "not a yardstick" in note and "\n" not in note


def test_evaluate_against_a_search_says_when_it_cheats(tmp_path: Path) -> None:
    save_env_bot(random_game_bot(RPS, seed=1), tmp_path / "rps.json")
    save_env_bot(random_game_bot(TICTACTOE, seed=1), tmp_path / "ttt.json")
    done = cli(tmp_path, "evaluate", "rps.json", "search:1", "-n", "4", "--seed", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    notes = [line for line in done.stdout.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and "search:1 sees more than a player" in notes[0]
    done = cli(tmp_path, "evaluate", "ttt.json", "search:1", "-n", "4", "--seed", "3")
    assert done.returncode == 0 and "note:" not in done.stdout, done.stdout + done.stderr
    done = cli(tmp_path, "evaluate", "rps.json", "random", "-n", "4", "--seed", "3")
    assert done.returncode == 0 and "note:" not in done.stdout, done.stdout + done.stderr
    records = history.load(tmp_path / "eval_history.json")
    assert ["reference_note" in r for r in records] == [True, False, False]
    assert records[0]["reference_note"] == notes[0].removeprefix("note: ")


def test_a_training_against_a_search_that_cheats_says_so(tmp_path: Path) -> None:
    (tmp_path / "bots").mkdir()
    game = CARDS.to_argument()
    args = ["--env", game, "--timesteps", "64", "--n-envs", "2", "--seed", "0"]
    done = cli(tmp_path, "train-env", "cards", *args, "--opponent-mode", "bot:search:1")
    assert done.returncode == 0, done.stdout + done.stderr
    notes = [line for line in done.stdout.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and "search:1 sees more than a player" in notes[0], done.stdout
    done = cli(tmp_path, "train-env", "cards2", *args, "--opponent-mode", "random")
    assert done.returncode == 0 and "note:" not in done.stdout, done.stdout + done.stderr


def test_a_stage_gated_against_a_search_that_cheats_warns(tmp_path: Path) -> None:
    ws = bare_workspace(
        tmp_path,
        'reference_bot = {builtin = "search", depth = 1}\neval_episodes = 4\n'
        'regression_margin = 0.99\n[env]\nkind = "pettingzoo"\nid = "tests.envs.card_game"\n'
        '[[stages]]\nname = "cards"\ntimesteps = 64\nflags = ["--n-envs", "2"]\n',
    )
    done = cli(ws, "run", "--no-push")
    assert done.returncode == 0, done.stdout + done.stderr
    warned = [line for line in done.stdout.splitlines() if "sees more than a player" in line]
    assert len(warned) == 1 and warned[0].startswith("warning: bots/curric-s1-cards.json: ")
    (record,) = history.load(ws / "eval_history.json")
    assert "foresees the draws" in record["reference_note"]
