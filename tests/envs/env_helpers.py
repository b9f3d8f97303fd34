"""What the env tests share: the cosmic-curriculum CLI in a subprocess, a bare workspace
with a test's stages.toml, and MiniGrid's view as pixels."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cosmic_curriculum.workspace.env_config import EnvSpec

# MiniGrid's view as pixels: 7x7 tiles of 8 pixels, a (56, 56, 3) uint8 image, which
# train-env trains with CnnPolicy (SB3's NatureCNN).
PIXELS = EnvSpec.model_validate(
    {
        "kind": "gymnasium",
        "id": "MiniGrid-Empty-5x5-v0",
        "imports": ["minigrid"],
        "wrappers": [
            {"call": "minigrid.wrappers:RGBImgPartialObsWrapper"},
            {"call": "minigrid.wrappers:ImgObsWrapper"},
        ],
    }
)


def cli(ws: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``cosmic-curriculum ARGS`` run in ``ws``, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "cosmic_curriculum", *args],
        cwd=ws,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def bare_workspace(tmp_path: Path, stages_toml: str) -> Path:
    """``init --bare`` with ``stages_toml`` written and committed."""
    ws = tmp_path / "ws"
    made = cli(tmp_path, "init", "--bare", str(ws))
    assert made.returncode == 0, made.stdout + made.stderr
    (ws / "stages.toml").write_text(stages_toml)
    subprocess.run(["git", "add", "stages.toml"], cwd=ws, check=True)
    subprocess.run(["git", "commit", "-qm", "stages"], cwd=ws, check=True)
    return ws
