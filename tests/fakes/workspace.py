"""Build throwaway workspaces wired to the fake trainer and evaluator (for tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from gitutil import init_repo

FAKES = Path(__file__).resolve().parent
TRAINER = FAKES / "fake_trainer.py"
EVALUATOR = FAKES / "fake_evaluator.py"
SEED_STATE = {"stage_index": 0, "attempt": 0, "status": "in_progress", "log": []}


def stages_toml(
    stages: list[str] | None = None,
    *,
    max_retries: int = 2,
    episodes: int = 20,
    timesteps: int = 400,
    external_eval: bool = True,
) -> str:
    stages = stages or ["score", "defend", "no_draws"]
    lines = [
        f"max_retries = {max_retries}",
        f"eval_episodes = {episodes}",
        "regression_margin = 0.15",
        'standing_args = ["--reset-std", "0.3", "--ent-coef", "0.001"]',
        'reference_bot = "bots/rookie.json"',
        f"training_command = {json.dumps([sys.executable, str(TRAINER)])}",
    ]
    if external_eval:
        lines.append(f"evaluation_command = {json.dumps([sys.executable, str(EVALUATOR)])}")
    lines += ["", "[defaults]", f"timesteps = {timesteps}", "n_parallel = 2", "speedup = 4", ""]
    for name in stages:
        lines += ["[[stages]]", f'name = "{name}"', f'flags = ["--stage-flag", "{name}"]', ""]
    return "\n".join(lines)


def make_workspace(
    path: Path,
    *,
    git_repo: bool = True,
    trainer_script: dict[str, Any] | None = None,
    eval_script: dict[str, Any] | None = None,
    **toml: Any,
) -> Path:
    """A workspace with seed-format files, a rookie bot and (optionally) a git repo.

    Scripted behaviour files are written next to it; point the fakes at them with
    :func:`fake_env`.
    """
    path.mkdir(parents=True, exist_ok=True)
    (path / "stages.toml").write_text(stages_toml(**toml))
    (path / "bots").mkdir(exist_ok=True)
    (path / "bots" / "rookie.json").write_text('{"kind": "fake", "name": "rookie"}\n')
    (path / "curriculum_state.json").write_text(json.dumps(SEED_STATE, indent=2) + "\n")
    (path / "eval_history.json").write_text("[]\n")
    (path / ".gitignore").write_text("checkpoints/\n.cosmic-curriculum.lock\nfake_*.jsonl\n")
    script_dir = path.parent / f"{path.name}-scripts"
    script_dir.mkdir(exist_ok=True)
    (script_dir / "trainer.json").write_text(json.dumps(trainer_script or {}))
    (script_dir / "eval.json").write_text(json.dumps(eval_script or {}))
    if git_repo:
        init_repo(path, message="initial workspace")
    return path


def set_scripts(
    path: Path,
    trainer_script: dict[str, Any] | None = None,
    eval_script: dict[str, Any] | None = None,
) -> None:
    script_dir = path.parent / f"{path.name}-scripts"
    if trainer_script is not None:
        (script_dir / "trainer.json").write_text(json.dumps(trainer_script))
    if eval_script is not None:
        (script_dir / "eval.json").write_text(json.dumps(eval_script))


def fake_env(path: Path) -> dict[str, str]:
    script_dir = path.parent / f"{path.name}-scripts"
    return {
        "FAKE_TRAINER_SCRIPT": str(script_dir / "trainer.json"),
        "FAKE_EVAL_SCRIPT": str(script_dir / "eval.json"),
    }


def trainer_runs(path: Path) -> list[dict[str, Any]]:
    log = path / "fake_runs.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def completed_trainings(path: Path) -> list[str]:
    return [r["experiment"] for r in trainer_runs(path) if r["event"] == "done"]


def read_state(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / "curriculum_state.json").read_text())
    return data


def cli_env(path: Path) -> dict[str, str]:
    """Environment for running the real CLI in a subprocess against ``path``."""
    env = dict(os.environ)
    env.update(fake_env(path))
    env["PYTHONPATH"] = str(FAKES.parent.parent)
    return env


def run_argv(path: Path, *flags: str) -> list[str]:
    """The command line of `cosmic-curriculum run` on workspace ``path`` (never pushes)."""
    return [
        sys.executable,
        "-m",
        "cosmic_curriculum",
        "run",
        "--workspace",
        str(path),
        "--no-push",
        *flags,
    ]


def run_cli(path: Path, *flags: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run `cosmic-curriculum run` on workspace ``path`` with the fakes' environment."""
    return subprocess.run(
        run_argv(path, *flags),
        env=cli_env(path),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def warnings_reporter() -> Any:
    """A Reporter that records its warnings in ``.warnings`` and ignores the rest."""
    from cosmic_curriculum.curriculum.reporter import Reporter

    class Recorder(Reporter):
        def __init__(self) -> None:
            self.warnings: list[str] = []

        def warning(self, message: str) -> None:
            self.warnings.append(message)

    return Recorder()


def run_in_process(path: Path, reporter: Any = None, **options: Any) -> Any:
    """`run_curriculum` on workspace ``path`` in this process (returns the final state).

    Never pushes and gives a stopped trainer 2 s unless ``options`` say otherwise; the
    default ``reporter`` ignores every event.
    """
    from cosmic_curriculum.curriculum.context import RunOptions
    from cosmic_curriculum.curriculum.loop import run_curriculum
    from cosmic_curriculum.curriculum.reporter import Reporter

    options.setdefault("push", False)
    options.setdefault("grace_seconds", 2.0)
    return run_curriculum(RunOptions(workspace=path, **options), reporter or Reporter())
