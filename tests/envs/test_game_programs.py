"""Programs as players of PettingZoo games (`cosmic-bot/1` with one seat's spaces and the
legal moves): the chat bot example through `evaluate GAME_BOT exec:...` against a real
local chat-completions server, the fake program's legal, illegal and fallback answers
through the game evaluator, and the preflight handshake against a game's spaces."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pettingzoo")

from game_helpers import CONNECT_FOUR, TICTACTOE, random_game_bot
from tcp_servers import ChatReply, chat_completions

from cosmic_curriculum.bots import ExecSpec
from cosmic_curriculum.envs.game_evaluate import evaluate_game
from cosmic_curriculum.envs.policy import save_env_bot
from cosmic_curriculum.envs.program_player import check_program
from cosmic_curriculum.errors import BotError

REPO = Path(__file__).resolve().parents[2]
CHAT_BOT = REPO / "examples" / "bots" / "chat_bot.py"
FAKE = REPO / "tests" / "fakes" / "fake_env_bot.py"


def fake(mode: str) -> ExecSpec:
    return ExecSpec((sys.executable, str(FAKE), mode), 10.0)


def game_bot(tmp_path: Path, spec: Any = TICTACTOE) -> Path:
    path = tmp_path / "bot.json"
    save_env_bot(random_game_bot(spec, seed=3), path)
    return path


def legal_of(body: dict[str, Any]) -> list[int]:
    """The legal moves the bot put in its prompt (the last user message)."""
    found = re.search(r"Legal actions: (\[.*\])", body["messages"][-1]["content"])
    assert found is not None, body
    return list(json.loads(found.group(1)))


def test_the_chat_bot_plays_tictactoe_through_evaluate(tmp_path: Path) -> None:
    asked: list[list[int]] = []
    rambled: list[int] = []

    def answer(body: dict[str, Any]) -> ChatReply:
        legal = legal_of(body)
        asked.append(legal)
        if len(asked) % 5 == 0:  # every fifth question the model rambles: a fallback
            rambled.append(len(asked))
            return ChatReply("The centre is strong, but the corners...")
        return ChatReply(f"I play {legal[-1]}.")

    bot = game_bot(tmp_path)
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "CHAT_API_KEY": "sk-test", "PYTHONPATH": path}  # this tree's code
    with chat_completions(answer) as server:
        argv = [sys.executable, str(CHAT_BOT), "--model", "tiny", "--base-url", server.base_url]
        command = [sys.executable, "-m", "cosmic_curriculum", "evaluate", str(bot)]
        done = subprocess.run(
            [*command, "exec:" + " ".join(argv), "--episodes", "4", "--seed", "2"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "eval_history.json").read_text())[-1]
    assert record["evaluator"] == "game" and record["episodes"] == 4
    assert record["reference"].startswith("exec:") and "chat_bot.py" in record["reference"]
    assert all(len(legal) >= 1 for legal in asked) and any(len(a) < 9 for a in asked)
    assert rambled and record["reference_fallbacks"] == len(rambled)
    assert f"fell back on {len(rambled)} moves" in done.stdout


def test_a_program_plays_connect_four_with_the_legal_moves(tmp_path: Path) -> None:
    bot = game_bot(tmp_path, CONNECT_FOUR)
    history = tmp_path / "eval_history.json"
    record = evaluate_game(
        bot, fake("fallback"), history_path=history, episodes=6, seed=1, deterministic=False
    )
    assert record["episodes"] == 6 and record["reference"].startswith("exec:")
    assert record["reference_fallbacks"] > 0 and len(record["reference_sha256"]) == 64
    assert record["wins_a"] + record["wins_b"] + record["draws"] == 6


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("illegal", "(not among the legal|outside the action space)"),
        ("garbage", "expected"),
        ("mismatch", "handshake action_space"),
    ],
)
def test_a_bad_program_in_a_game_is_one_line_and_no_record(
    tmp_path: Path, mode: str, said: str
) -> None:
    bot = game_bot(tmp_path)
    history = tmp_path / "eval_history.json"
    with pytest.raises(BotError) as caught:
        evaluate_game(bot, fake(mode), history_path=history, episodes=2, seed=0, deterministic=True)
    message = str(caught.value)
    assert "\n" not in message and re.search(said, message) and "fake_env_bot.py" in message
    assert not history.exists()


def test_preflight_checks_a_programs_handshake_against_the_games_spaces() -> None:
    check_program(fake("ok"), TICTACTOE)  # declares the seat's spaces back: passes
    with pytest.raises(BotError, match="handshake action_space"):
        check_program(fake("mismatch"), CONNECT_FOUR)
