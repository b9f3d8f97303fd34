"""A Gymnasium curriculum with no trainer or evaluator of the user's own: `run` trains
each stage with `train-env`, gates it with the built-in env evaluator (threshold against
{builtin = "random"}, then margin against stage 1's bot), and the committed env bots
replay in a clone that has no checkpoints/."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from env_helpers import bare_workspace, cli

STAGES = """\
max_retries = 1
reference_bot = {builtin = "random"}

[env]
kind = "gymnasium"
id = "FrozenLake-v1"
kwargs = {map_name = "4x4", is_slippery = false}

[defaults]
timesteps = 20_000

[[stages]]
name = "dry"
gate = {rule = "threshold", target = 0.9}

[[stages]]
name = "again"
timesteps = 8_000
"""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_gymnasium_curriculum_needs_no_commands_of_its_own(tmp_path: Path) -> None:
    pytest.importorskip("gymnasium")
    pytest.importorskip("stable_baselines3")
    ws = bare_workspace(tmp_path, STAGES)

    done = cli(ws, "run")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "curriculum done" in done.stdout + done.stderr

    state = json.loads((ws / "curriculum_state.json").read_text())
    passed = [e["experiment"] for e in state["log"] if e["decision"] == "pass"]
    assert state["status"] == "done" and len(passed) == 2
    records = json.loads((ws / "eval_history.json").read_text())
    first = next(r for r in records if r["curriculum_experiment"] == passed[0])
    assert first["reference"] == "builtin:random" and first["evaluator"] == "env"
    assert first["successes"] >= 0.9 * first["episodes"]
    second = next(r for r in records if r["curriculum_experiment"] == passed[1])
    assert second["reference"] == f"bots/{passed[0]}.json" and second["episodes"] == 100
    for experiment in passed:
        log = (ws / "logs" / f"{experiment}.log").read_text()
        assert "train-env" in log and "--reset-std" not in log
    stage2 = json.loads((ws / "bots" / f"{passed[1]}.json").read_text())
    assert stage2["provenance"]["resumed_from"] == f"checkpoints/{passed[0]}/final.zip"

    # The committed bots replay where no checkpoint is.
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ws), str(clone)], check=True)
    assert not (clone / "checkpoints").exists()
    for experiment in passed:
        replay = cli(clone, "evaluate", f"bots/{experiment}.json", "random", "-n", "20")
        assert replay.returncode == 0, replay.stdout + replay.stderr
        assert "20/20 successes" in replay.stdout, replay.stdout
    stage2_vs_1 = cli(clone, "evaluate", f"bots/{passed[1]}.json", f"bots/{passed[0]}.json")
    assert stage2_vs_1.returncode == 0, stage2_vs_1.stdout + stage2_vs_1.stderr
    assert "draws" in stage2_vs_1.stdout and "successes" in stage2_vs_1.stdout


TUNED = """\
max_retries = 1
reference_bot = {builtin = "random"}

[env]
kind = "gymnasium"
id = "CartPole-v1"

[defaults]
timesteps = 8_000

[trainer]
algo = "A2C"
hyperparams_file = "hyperparams/a2c.yml"
hyperparams = {gamma = 0.99}

[[stages]]
name = "pole"

[[stages]]
name = "finer"
timesteps = 2_000
trainer = {hyperparams = {learning_rate = "lin_3e-4"}}
reference_bot = {builtin = "random"}  # the wiring is tested here, not what 2,000 steps learn
"""

# An entry in rl-zoo3's format, its values as the zoo writes them.
ZOO_A2C = """\
CartPole-v1:
  n_envs: 8
  n_timesteps: !!float 5e5
  policy: 'MlpPolicy'
  ent_coef: 0.0
  learning_rate: lin_7e-4
  normalize: "dict(norm_obs=True, norm_reward=False)"
  policy_kwargs: "dict(net_arch=[32], activation_fn=nn.Tanh)"
"""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_trainer_table_and_a_zoo_file_reach_train_env(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    made = cli(tmp_path, "init", "--bare", str(ws))
    assert made.returncode == 0, made.stdout + made.stderr
    (ws / "stages.toml").write_text(TUNED)
    (ws / "hyperparams").mkdir()
    (ws / "hyperparams" / "a2c.yml").write_text(ZOO_A2C)
    subprocess.run(["git", "add", "."], cwd=ws, check=True)
    subprocess.run(["git", "commit", "-qm", "stages"], cwd=ws, check=True)

    done = cli(ws, "run")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "hyperparams/a2c.yml:CartPole-v1 has n_timesteps 500,000; the stage trains its " in out
    state = json.loads((ws / "curriculum_state.json").read_text())
    first, second = (e["experiment"] for e in state["log"] if e["decision"] == "pass")
    log = (ws / "logs" / f"{second}.log").read_text()
    assert "--algo A2C --n-envs 8 --policy MlpPolicy --hyperparams" in log
    assert '"learning_rate":"lin_3e-4"' in log and '"gamma":0.99' in log
    assert "VecNormalize (statistics loaded), warm start" in log
    for experiment in (first, second):
        bot = json.loads((ws / "bots" / f"{experiment}.json").read_text())
        assert bot["provenance"]["algo"] == "A2C" and bot["obs_norm"] is not None
        assert (ws / "checkpoints" / experiment / "final.vecnormalize.pkl").is_file()
