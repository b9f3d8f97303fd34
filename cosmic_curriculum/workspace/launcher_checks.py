"""Checks of `[launcher]` that need more than one key: settings of another launcher's kind,
remote evaluation, and a Slurm job's `time`, `mem`, `gres`/`gpus` and `sbatch_args`.

Pure rules (:func:`launcher_problem`, :func:`slurm_seconds`); loaded only while a config
is validated (``config_checks.check_whole_config`` imports it there), never at import.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cosmic_curriculum.workspace.config import CurriculumConfig

RAY_KEYS = ("address", "num_gpus", "num_cpus", "memory", "request_timeout")
SLURM_KEYS = ("partition", "account", "qos", "constraint", "gres", "gpus", "cpus_per_task",
              "mem", "time", "sbatch_args", "signal_grace")  # fmt: skip
# sbatch's options the launcher passes itself (each job's name, log, signal...), short
# and long: `sbatch_args` must not set them behind its back.
OWNED_SBATCH = {
    "--job-name": "-J", "--output": "-o", "--error": "-e", "--open-mode": "",
    "--chdir": "-D", "--signal": "", "--parsable": "", "--export": "", "--requeue": "",
    "--no-requeue": "", "--wrap": "",
}  # fmt: skip
MEM_RE = re.compile(r"^[1-9][0-9]*[KMGT]?$")
# Slurm's time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S.
TIME_RE = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")
MIN_TIME_SECONDS = 60  # Slurm's smallest limit is a minute


def slurm_seconds(text: str) -> int | None:
    """Seconds of a Slurm time limit (``"24:00:00"``, ``"1-12"``, ``"90"``), else None."""
    m = TIME_RE.fullmatch(text.strip())
    if not m:
        return None
    days, a, b, c = (int(g) if g is not None else None for g in m.groups())
    if days is not None:  # D-H[:M[:S]]
        return days * 86400 + (a or 0) * 3600 + (b or 0) * 60 + (c or 0)
    if c is not None:  # H:M:S
        return (a or 0) * 3600 + (b or 0) * 60 + c
    return (a or 0) * 60 + (b or 0)  # M or M:S


def owned_sbatch_option(token: str) -> str | None:
    """The launcher's own sbatch option ``token`` sets (a long one's prefix included)."""
    name = token.partition("=")[0]
    for long, short in OWNED_SBATCH.items():
        if short and (token == short or (token.startswith(short) and len(token) > 2)):
            return long
        if name == long or (name.startswith("--") and len(name) > 3 and long.startswith(name)):
            return long
    return None


def launcher_problem(config: CurriculumConfig) -> tuple[tuple[str, ...], str] | None:
    """The first problem of ``config``'s `[launcher]` (its key and one line), else None."""
    launcher = config.launcher
    kind, given = launcher.kind, launcher.model_fields_set
    if launcher.evaluate_remote and kind == "local":
        return ("launcher", "evaluate_remote"), (
            "evaluate_remote = true sends the evaluation_command to a cluster: it needs "
            'kind = "ray" or kind = "slurm" (or set evaluate_remote = false)'
        )
    if launcher.evaluate_remote and not config.evaluation_command:
        return ("launcher",), (
            "evaluate_remote = true needs an evaluation_command: the built-in evaluator "
            "always runs on this machine (it takes about a second); set one or remove "
            "evaluate_remote"
        )
    for key in SLURM_KEYS if kind != "slurm" else ():
        if key in given:
            return ("launcher", key), (
                f'{key} is a setting of Slurm jobs: it needs kind = "slurm" (got kind = '
                f'"{kind}"); remove it or set kind = "slurm"'
            )
    if kind != "slurm":
        return None
    for key in RAY_KEYS:
        if key in given:
            return ("launcher", key), (
                f'{key} is a setting of Ray jobs, not of kind = "slurm"; remove it (a Slurm '
                "job asks for gres or gpus, cpus_per_task and mem)"
            )
    return _slurm_problem(config)


def _slurm_problem(config: CurriculumConfig) -> tuple[tuple[str, ...], str] | None:
    launcher = config.launcher
    if launcher.gres is not None and launcher.gpus is not None:
        return ("launcher", "gpus"), (
            f"gres = {launcher.gres!r} and gpus = {launcher.gpus} both ask for GPUs; keep one"
        )
    if launcher.mem is not None and not MEM_RE.fullmatch(launcher.mem):
        return ("launcher", "mem"), (
            f'mem = {launcher.mem!r} is not a Slurm memory size; write e.g. "32G" or "8000M"'
        )
    if launcher.time is not None:
        seconds = slurm_seconds(launcher.time)
        if seconds is None:
            return ("launcher", "time"), (
                f"time = {launcher.time!r} is not a Slurm time limit; write e.g. "
                '"24:00:00" (hours:minutes:seconds), "2-00:00:00" or "90" (minutes)'
            )
        if seconds < MIN_TIME_SECONDS:
            return ("launcher", "time"), (
                f"time = {launcher.time!r} is under Slurm's smallest limit of one minute; "
                'write at least "1:00" (minutes:seconds)'
            )
        if launcher.signal_grace >= seconds:
            return ("launcher", "signal_grace"), (
                f"signal_grace = {launcher.signal_grace} s is not shorter than time = "
                f"{launcher.time!r} ({seconds} s): the trainer would be told to stop at its "
                "start; lower signal_grace or raise time"
            )
    for token in launcher.sbatch_args:
        if not token.startswith("-"):
            return ("launcher", "sbatch_args"), (
                f'{token!r} is not an sbatch option; write each as one "--name=value" string'
            )
        owned = owned_sbatch_option(token)
        if owned is not None:
            return ("launcher", "sbatch_args"), (
                f"{token!r} sets sbatch's {owned}, which the Slurm launcher passes itself "
                "(docs/SCALING.md); remove it"
            )
    return None
