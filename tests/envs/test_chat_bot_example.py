"""examples/bots/chat_bot.py against a real local chat-completions server: end to end
through `evaluate BOT exec:...` on FrozenLake, and masked-game requests (legal-action
lists) driven through the protocol; legal, illegal, garbage, slow and failing replies."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from tcp_servers import ChatReply, chat_completions
from test_env_evaluate import LAKE, ROUTE, table_bot

from cosmic_curriculum.bots import ExecSpec
from cosmic_curriculum.envs.policy import save_env_bot
from cosmic_curriculum.envs.program_player import ProgramPlayer
from cosmic_curriculum.envs.spaces import Space
from cosmic_curriculum.errors import BotError

REPO = Path(__file__).resolve().parents[2]
CHAT_BOT = REPO / "examples" / "bots" / "chat_bot.py"


def observation(body: dict[str, Any]) -> Any:
    """The observation the bot put in its prompt (the last user message)."""
    prompt = body["messages"][-1]["content"]
    found = re.search(r"Observation: (.*)\n", prompt)
    assert found is not None, prompt
    return json.loads(found.group(1))


def chat_argv(base_url: str, *extra: str) -> list[str]:
    return [sys.executable, str(CHAT_BOT), "--model", "tiny", "--base-url", base_url, *extra]


def evaluate(tmp_path: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    bot = tmp_path / "lake.json"
    save_env_bot(table_bot(LAKE, ROUTE), bot)
    exec_spec = "exec:" + " ".join(argv)
    command = [sys.executable, "-m", "cosmic_curriculum", "evaluate", str(bot), exec_spec]
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "CHAT_API_KEY": "sk-test", "PYTHONPATH": path}  # this tree's code
    return subprocess.run(
        [*command, "--episodes", "6", "--seed", "2"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_chat_bot_plays_the_lake_through_evaluate(tmp_path: Path) -> None:
    garbage = []

    def answer(body: dict[str, Any]) -> ChatReply:
        state = observation(body)
        if state == 4:  # on the route's second square the model rambles: a fallback
            garbage.append(state)
            return ChatReply("Let me think about this lake...")
        return ChatReply(f"I move {ROUTE.get(state, 1)}.")

    with chat_completions(answer) as server:
        done = evaluate(tmp_path, chat_argv(server.base_url, "--timeout", "10"))
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "eval_history.json").read_text())[-1]
    assert record["reference"].startswith("exec:") and "chat_bot.py" in record["reference"]
    assert record["episodes"] == 6 and garbage
    assert record["reference_fallbacks"] == len(garbage)  # each named in the record
    assert f"fell back on {len(garbage)} decisions" in done.stdout
    body, headers = server.calls[0], server.headers[0]
    assert body["model"] == "tiny" and headers["Authorization"] == "Bearer sk-test"
    assert "Legal actions: [0, 1, 2, 3]" in body["messages"][-1]["content"]
    assert "FrozenLake-v1" in body["messages"][0]["content"]


def test_an_unusable_reply_in_error_mode_is_one_line_and_no_record(tmp_path: Path) -> None:
    with chat_completions(lambda body: ChatReply(status=500)) as server:
        argv = chat_argv(server.base_url, "--on-bad-reply", "error")
        done = evaluate(tmp_path, argv)
    assert done.returncode == 1 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: bot exec:") and "exited with status 3 in request 1" in line
    assert "chat_bot: request 1, game 0: the endpoint answered HTTP 500" in line
    history = tmp_path / "eval_history.json"
    assert not history.exists() or json.loads(history.read_text()) == []


BOARD = Space("Box", shape=(2,), low=np.zeros(2), high=np.ones(2))
MASK = np.array(
    [[True, True, False, False], [False, True, True, False], [True] * 4, [False, False, True, True]]
)
# Each game's scripted model: row 0 answers a legal move, 1 an illegal one, 2 HTTP 500,
# 3 nothing within the bot's timeout.
SCRIPT = {0: ChatReply("1"), 1: ChatReply("3"), 2: ChatReply(status=500), 3: ChatReply(hold=True)}


def test_masked_games_get_their_legal_actions_and_seeded_fallbacks() -> None:
    def answer(body: dict[str, Any]) -> ChatReply:
        return SCRIPT[round(observation(body)[0] * 10)]

    with chat_completions(answer) as server:
        argv = chat_argv(server.base_url, "--timeout", "0.5", "--seed", "5")
        spec = ExecSpec(tuple(argv), 10.0)
        with ProgramPlayer(spec, BOARD, Space("Discrete", n=4), env="game", masked=True) as bot:
            assert bot.name == "chat:tiny"
            obs = np.array([[i / 10, 0.0] for i in range(4)], dtype=np.float32)
            actions = bot.act(obs, mask=MASK).tolist()
            assert bot.fallbacks == 3
        prompts = sorted(c["messages"][-1]["content"] for c in server.calls)
    rng = random.Random(5)  # the bot's fallbacks, drawn in row order
    assert actions == [1, rng.choice([1, 2]), rng.choice([0, 1, 2, 3]), rng.choice([2, 3])]
    assert "Legal actions: [1, 2]" in prompts[1] and "Legal actions: [2, 3]" in prompts[3]


def test_the_chat_bot_refuses_box_actions_in_one_line() -> None:
    box = Space("Box", shape=(1,), low=np.zeros(1), high=np.ones(1))
    spec = ExecSpec(tuple(chat_argv("http://127.0.0.1:9")), 10.0)
    with pytest.raises(BotError, match=r"exited with status 2 before its handshake.*Discrete"):
        ProgramPlayer(spec, BOARD, box, env="arm")
