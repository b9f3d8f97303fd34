"""A game the user wrote, kept in the workspace as a module of its own: `run` finds it
(after installed modules), trains and gates it, and `evaluate` plays its bot; files in
the workspace named like standard modules replace nothing in the trainer."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.envs.env_helpers import bare_workspace, cli

# Nim on heaps of 1 and 2 stones: take 1 or 2 from one heap; who takes the last wins.
NIM = """
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

HEAPS = (1, 2)


class Nim(AECEnv):
    metadata = {"name": "nim_v0", "render_modes": []}

    def __init__(self):
        super().__init__()
        self.possible_agents = ["player_0", "player_1"]
        self._obs = spaces.Dict({
            "observation": spaces.Box(0, 2, (2,), np.float32),
            "action_mask": spaces.Box(0, 1, (4,), np.int8),
        })

    def observation_space(self, agent):
        return self._obs

    def action_space(self, agent):
        return spaces.Discrete(4)  # heap * 2 + (stones - 1)

    def observe(self, agent):
        mask = np.array([k + 1 <= n for n in self.heaps for k in (0, 1)], np.int8)
        return {"observation": np.array(self.heaps, np.float32), "action_mask": mask}

    def reset(self, seed=None, options=None):
        self.heaps = list(HEAPS)
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0 for a in self.agents}
        self._cumulative_rewards = {a: 0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = self.agents[0]

    def step(self, action):
        mover = self.agent_selection
        if self.terminations[mover]:
            self._was_dead_step(action)
            return
        heap, take = divmod(int(action), 2)
        self.heaps[heap] -= take + 1
        other = self.agents[1 - self.agents.index(mover)]
        self._cumulative_rewards[mover] = 0
        if sum(self.heaps) == 0:
            self.rewards = {mover: 1, other: -1}
            self.terminations = {a: True for a in self.agents}
        self._accumulate_rewards()
        self.agent_selection = other


def env():
    return Nim()
"""

STAGES = """
reference_bot = {builtin = "random"}
eval_episodes = 20
max_retries = 0

[env]
kind = "pettingzoo"
id = "games_of_mine.nim"

[defaults]
timesteps = 1024

[[stages]]
name = "nim"
flags = ["--opponent-mode", "random"]
"""

SHADOWS = ("random", "json", "typing")  # names a user might give a script of their own


@pytest.mark.slow  # a training and two evaluations through the command: about 30 s
def test_a_game_module_in_the_workspace_trains_gates_and_evaluates(tmp_path: Path) -> None:
    pytest.importorskip("pettingzoo")
    pytest.importorskip("sb3_contrib")
    from cosmic_curriculum.workspace import history

    ws = bare_workspace(tmp_path, STAGES)
    (ws / "games_of_mine").mkdir()
    (ws / "games_of_mine" / "__init__.py").write_text("")
    (ws / "games_of_mine" / "nim.py").write_text(NIM)
    for name in SHADOWS:
        (ws / f"{name}.py").write_text(f"raise SystemExit('the workspace {name}.py ran')\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = cli(elsewhere, "run", "--no-push", "--workspace", str(ws), timeout=600)
    out = done.stdout + done.stderr
    assert "Traceback" not in out and "the workspace" not in out, out
    assert "no module named" not in out, out
    (record,) = history.load(ws / "eval_history.json")
    assert record["env"] == "games_of_mine.nim" and record["episodes"] == 20
    bot = ws / "bots" / "curric-s1-nim.json"
    assert bot.is_file(), out
    played = cli(elsewhere, "evaluate", str(bot), "search:3", "-n", "10",
                 "--history", str(ws / "eval_history.json"))  # fmt: skip
    assert played.returncode == 0, played.stdout + played.stderr
    assert "in 10 games" in played.stdout
    assert len(history.load(ws / "eval_history.json")) == 2
