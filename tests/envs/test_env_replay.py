"""`replay` of an env bot: one episode from rgb_array frames, the outcome in the title."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")
sb3 = pytest.importorskip("stable_baselines3")

from PIL import Image  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from cosmic_curriculum.cli import app  # noqa: E402
from cosmic_curriculum.envs.export import env_bot_from_model  # noqa: E402
from cosmic_curriculum.envs.gymnasium import make_env  # noqa: E402
from cosmic_curriculum.envs.onnx_twin import write_env_twin  # noqa: E402
from cosmic_curriculum.envs.policy import save_env_bot  # noqa: E402
from cosmic_curriculum.envs.replay import Frames  # noqa: E402
from cosmic_curriculum.workspace.env_config import EnvSpec  # noqa: E402

LAKE = EnvSpec(
    kind="gymnasium", id="FrozenLake-v1", kwargs={"map_name": "4x4", "is_slippery": False}
)


class Blind(gymnasium.Env):
    """An env that draws nothing."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}
    observation_space = gymnasium.spaces.Box(-1, 1, (2,))
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, render_mode: Any = None) -> None:
        self.render_mode = render_mode

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        super().reset(seed=seed)
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action: Any) -> Any:
        return np.zeros(2, dtype=np.float32), 1.0, True, False, {}


def bot_file(tmp_path: Path, spec: EnvSpec) -> Path:
    model = sb3.PPO("MlpPolicy", make_env(spec), seed=0, device="cpu")
    path = tmp_path / "bot.json"
    save_env_bot(env_bot_from_model(model, spec), path)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".gif", ".png"])
def test_an_episode_is_drawn_with_its_outcome(tmp_path: Path, suffix: str) -> None:
    path = bot_file(tmp_path, LAKE)
    out = tmp_path / f"episode{suffix}"
    result = CliRunner().invoke(app, ["replay", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "FrozenLake-v1: bot.json, seed 0: return " in result.output and "steps" in result.output
    with Image.open(out) as image:
        assert image.format == ("GIF" if suffix == ".gif" else "PNG")
        frames = getattr(image, "n_frames", 1)
    assert frames > 1 if suffix == ".gif" else frames == 1


@pytest.mark.slow
def test_the_twin_replays_and_an_arena_reference_is_refused(tmp_path: Path) -> None:
    path = bot_file(tmp_path, LAKE)
    twin = write_env_twin(path)
    out = tmp_path / "twin.png"
    assert CliRunner().invoke(app, ["replay", str(twin), "--out", str(out)]).exit_code == 0
    result = CliRunner().invoke(app, ["replay", str(path), "bots/rookie.json", "--out", str(out)])
    assert result.exit_code == 2 and "an env bot plays alone" in result.stderr  # usage


def test_an_env_without_rgb_frames_is_one_line(tmp_path: Path) -> None:
    if "Blind-v0" not in gymnasium.envs.registration.registry:
        gymnasium.register(id="Blind-v0", entry_point=Blind)
    path = bot_file(tmp_path, EnvSpec(kind="gymnasium", id="Blind-v0"))
    result = CliRunner().invoke(app, ["replay", str(path), "--out", str(tmp_path / "x.gif")])
    assert result.exit_code == 1 and "has no rgb_array render" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_frames_of_a_long_episode_stay_few_and_even() -> None:
    frames = Frames(5)
    for i in range(1000):
        frames.add(i, last=i == 999)
    assert len(frames.kept) <= 11 and frames.kept[0] == 0 and frames.kept[-1] == 999
    picked = frames.evenly(4)
    assert picked[0] == 0 and picked[-1] == 999 and len(picked) == 4
