"""Every workspace path and the experiment-name scheme, in one place.

A workspace holds::

    stages.toml                 the curriculum (default --config)
    curriculum_state.json       resumable state          eval_history.json  every evaluation
    .cosmic-curriculum.lock     one run per workspace
    .cosmic-curriculum.commit   a decision saved but not yet in git (its commit message)
    bots/<exp>.json             exported bots             checkpoints/<exp>/final.zip
    bots/<exp>.onnx             the same bot as ONNX (for games; not used by the curriculum)
    checkpoints/<exp>/step_<n>.zip  periodic checkpoints  checkpoints/seed/  imported seeds
    logs/<exp>.log              trainer output            logs/<exp>.curve.png  its curve
    logs/review-<stage>.md      why a stage blocked       logs/curriculum_curves.png
    logs/curriculum.log         output of a detached run
    REPORT.md                   the curriculum at a glance (committed)
    logs/report/*.png           its pictures              REPORT.html  `report`'s page

Experiments are named ``curric-s{i}-{stage}`` (i counted from 1) plus ``-retry{n}`` for
attempt n >= 1, plus ``-c{k}`` for candidate k of an attempt with ``candidates = K > 1``.
Names become file names, so :func:`check_experiment` refuses anything that could point
outside the workspace. This module imports nothing heavy: `status` uses it.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import NamedTuple

CONFIG_FILE = "stages.toml"
STATE_FILE = "curriculum_state.json"
HISTORY_FILE = "eval_history.json"
LOCK_FILE = ".cosmic-curriculum.lock"
PENDING_COMMIT_FILE = ".cosmic-curriculum.commit"
CURVES_FILE = "curriculum_curves.png"
DETACHED_LOG = "curriculum.log"
FINAL_CHECKPOINT = "final.zip"
REPORT_FILE = "REPORT.md"
REPORT_HTML = "REPORT.html"
REPORT_PICTURES = ("curves.png", "ladder.png")  # in logs/report/, linked from REPORT.md

# The longest file name most file systems allow (bytes), and what an atomic write adds to
# a name for its temp file (system/fsio.py: ".", ".tmp-", a pid of up to 7 digits, "-",
# 8 hex digits). Every name derived from user text must fit with its longest suffix.
NAME_MAX = 255
TEMP_NAME_OVERHEAD = 22
# What follows an experiment's name in the files named after it (bots/, logs/).
EXPERIMENT_SUFFIXES = (".json", ".onnx", ".log", ".curve.png", ".episodes.jsonl", ".eval-stop")

EXPERIMENT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
STEP_RE = re.compile(r"^step_(\d+)\.zip$")
# The stage number inside an experiment name, for ordering logs by stage.
STAGE_NUMBER_RE = re.compile(r"-s(\d+)-")


def experiment_name(stage_index: int, stage_name: str, attempt: int) -> str:
    """`curric-s{i}-{stage}` with i counted from 1, plus `-retry{n}` for attempt n >= 1."""
    base = f"curric-s{stage_index + 1}-{stage_name}"
    return base if attempt == 0 else f"{base}-retry{attempt}"


def candidate_name(experiment: str, k: int) -> str:
    """Candidate ``k`` (from 1) of an attempt with ``candidates = K > 1``: `<exp>-c{k}`."""
    return f"{experiment}-c{k}"


def longest_derived_name(experiment: str) -> str:
    """The longest file name made from ``experiment`` (its name plus the longest suffix)."""
    return experiment + max(EXPERIMENT_SUFFIXES, key=len)


def name_fits(name: str) -> bool:
    """Whether a file named ``name`` and its atomic write's temp fit NAME_MAX."""
    return len(name.encode("utf-8", "surrogateescape")) + TEMP_NAME_OVERHEAD <= NAME_MAX


def max_name_part(fixed: int) -> int:
    """The longest user-chosen part of an experiment name whose other parts take
    ``fixed`` characters, so that every file named after it fits."""
    return NAME_MAX - TEMP_NAME_OVERHEAD - max(len(s) for s in EXPERIMENT_SUFFIXES) - fixed


def check_experiment_fits(value: str) -> str:
    """``value`` if every file named after it fits NAME_MAX; ValueError otherwise. For an
    experiment named on a trainer's command line (the config checks a stage's names)."""
    if not name_fits(longest_derived_name(value)):
        limit = max_name_part(0)
        raise ValueError(
            f"experiment name {value[:24]!r}... is {len(value)} characters: the files named "
            f"after it would exceed the file system's limit of {NAME_MAX} bytes a name; "
            f"shorten it to at most {limit} characters"
        )
    return value


def check_experiment(value: str) -> str:
    """``value`` if it is a plain file name; ValueError otherwise (it names the rule).
    Its length is the config's to check (`config_checks`): a state is never refused."""
    if not EXPERIMENT_RE.match(value) or ".." in value:
        raise ValueError(
            f"experiment name {value!r} is not a plain file name (letters, digits, '_', '-', "
            "'.'; no '/' or '..')"
        )
    return value


def step_checkpoint_name(timesteps: int) -> str:
    return f"step_{timesteps}.zip"


def step_checkpoints(directory: Path) -> list[tuple[int, Path]]:
    """The periodic checkpoints ``step_<n>.zip`` in ``directory``, oldest first."""
    if not directory.is_dir():
        return []
    found = []
    for entry in directory.iterdir():
        match = STEP_RE.match(entry.name)
        if match and entry.is_file():
            found.append((int(match.group(1)), entry))
    return sorted(found)


def latest_step_checkpoint(directory: Path) -> Path | None:
    """The periodic checkpoint with the largest step count, if any."""
    found = step_checkpoints(directory)
    return found[-1][1] if found else None


def published_paths(experiment: str) -> list[Path]:
    """Workspace-relative paths of an experiment's results: its bot, log and learning curve."""
    return [
        Path("bots") / f"{experiment}.json",
        Path("logs") / f"{experiment}.log",
        Path("logs") / f"{experiment}.curve.png",
    ]


def committed_paths(experiment: str) -> list[Path]:
    """What the curriculum commits for an experiment: its results and the bot's ONNX twin
    (a few KB, and what a game embeds, so it travels with the JSON). `run_training.sh`
    alone publishes just :func:`published_paths` (bot, log and curve, as it promises)."""
    return [*published_paths(experiment), Path("bots") / f"{experiment}.onnx"]


class Layout(NamedTuple):
    """The paths of one workspace (``root`` should be absolute). A named tuple rather than a
    frozen dataclass: `status` builds one on every call, and dataclasses imports inspect."""

    root: Path

    @property
    def state(self) -> Path:
        return self.root / STATE_FILE

    @property
    def history(self) -> Path:
        return self.root / HISTORY_FILE

    @property
    def lock(self) -> Path:
        return self.root / LOCK_FILE

    @property
    def pending_commit(self) -> Path:
        return self.root / PENDING_COMMIT_FILE

    @property
    def config(self) -> Path:
        return self.root / CONFIG_FILE

    @property
    def bots(self) -> Path:
        return self.root / "bots"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def seeds(self) -> Path:
        return self.checkpoints / "seed"

    @property
    def curves(self) -> Path:
        return self.logs / CURVES_FILE

    @property
    def detached_log(self) -> Path:
        return self.logs / DETACHED_LOG

    @property
    def report(self) -> Path:
        return self.root / REPORT_FILE

    @property
    def report_html(self) -> Path:
        return self.root / REPORT_HTML

    @property
    def report_dir(self) -> Path:
        return self.logs / "report"

    def report_files(self) -> list[Path]:
        """What the report commits: REPORT.md and its pictures."""
        return [self.report, *(self.report_dir / name for name in REPORT_PICTURES)]

    def bot(self, experiment: str) -> Path:
        return self.bots / f"{experiment}.json"

    def onnx(self, experiment: str) -> Path:
        return self.bots / f"{experiment}.onnx"

    def log(self, experiment: str) -> Path:
        return self.logs / f"{experiment}.log"

    def eval_stream(self, experiment: str) -> Path:
        """Where an evaluation command may stream its episodes (never committed)."""
        return self.logs / f"{experiment}.episodes.jsonl"

    def eval_stop(self, experiment: str) -> Path:
        """Made once the gate has decided on the streamed episodes: the evaluator stops."""
        return self.logs / f"{experiment}.eval-stop"

    def curve(self, experiment: str) -> Path:
        return self.logs / f"{experiment}.curve.png"

    def checkpoint_dir(self, experiment: str) -> Path:
        return self.checkpoints / experiment

    def final_checkpoint(self, experiment: str) -> Path:
        return self.checkpoint_dir(experiment) / FINAL_CHECKPOINT

    def step_checkpoint(self, experiment: str, timesteps: int) -> Path:
        return self.checkpoint_dir(experiment) / step_checkpoint_name(timesteps)

    def latest_step(self, experiment: str) -> Path | None:
        return latest_step_checkpoint(self.checkpoint_dir(experiment))

    def review(self, stage_name: str) -> Path:
        return self.logs / f"review-{stage_name}.md"

    def reviews(self) -> list[Path]:
        return sorted(self.logs.glob("review-*.md"))

    def attempt_tag(self, experiment: str, role: str = "train") -> str:
        """What marks every process one attempt's training (or evaluation) started."""
        return f"{self.root}:{experiment}:{role}"

    def launch_id(self, experiment: str, started_at: str, continuation: int = 0) -> str:
        """The id one launch of an attempt is submitted under (unique per launch, and
        computed again from the saved state after a crash); its ``continuation``-th
        continuation (1, 2, ...) adds ``-cont<n>``, unique even within the same second."""
        digest = hashlib.sha256(f"{self.root}\0{experiment}\0{started_at}".encode()).hexdigest()
        suffix = f"-cont{continuation}" if continuation else ""
        return f"cosmic-{experiment}-{digest[:12]}{suffix}"

    def rel(self, path: Path) -> str:
        """``path`` relative to the workspace when it is inside, else as given."""
        try:
            return str(path.resolve().relative_to(self.root))
        except ValueError:
            return str(path)
