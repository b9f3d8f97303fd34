"""`stages.toml`: the curriculum definition, validated before any GPU time is spent.

Every key is optional except ``[[stages]]`` (each with a ``name`` and its trainer
``flags``); the shipped presets (``cosmic_curriculum/data/presets/``) show them all with
comments, and README's `stages.toml` section explains each. Defaults: ``defaults.py``.

Flags are argv lists, never shell strings. Stage names become parts of file names, so they
are restricted to ``[a-z0-9_-]+``. Unknown keys are errors. Every error is one line naming
the file, the line, the key, the problem and the fix.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from cosmic_curriculum.defaults import (
    BOT_TIMEOUT_SECONDS,
    CANDIDATES,
    DECISION_TICKS,
    EVAL_EPISODES,
    LAUNCHER_KIND,
    MAX_CONTINUATIONS,
    MAX_RETRIES,
    N_PARALLEL,
    NOTIFY_ON,
    NOTIFY_TIMEOUT_SECONDS,
    RAY_NUM_CPUS,
    RAY_NUM_GPUS,
    RAY_REQUEST_TIMEOUT_SECONDS,
    REFERENCE_BOT,
    REGRESSION_MARGIN,
    STAGE_TIMESTEPS,
    STANDING_ARGS,
    TRAINING_COMMAND,
    seconds_problem,
)
from cosmic_curriculum.workspace.env_config import EnvOverride, EnvSpec, check_envs, merged_env
from cosmic_curriculum.workspace.gate_settings import GateSettings as GateSettings  # re-exported

if TYPE_CHECKING:
    from cosmic_curriculum.workspace.trainer_config import TrainerConfig

STAGE_NAME_RE = re.compile(r"^[a-z0-9_-]+$")


def _no_nul(value: str) -> str:
    # Arguments and paths reach execve/open, which cut a string at NUL: refuse it here,
    # before any training, rather than fail at launch on every rerun.
    if "\0" in value:
        raise ValueError("contains a NUL character (\\0); remove it")
    return value


# A string that becomes a command-line argument or a path.
Arg = Annotated[str, AfterValidator(_no_nul)]


def _valid_trainer(value: dict[str, Any]) -> dict[str, Any]:
    # Checked by its own module, loaded only for a file that has a trainer table.
    from cosmic_curriculum.workspace.trainer_config import valid_trainer_table

    return valid_trainer_table(value)


# `[trainer]` or a stage's `trainer = {...}` (workspace/trainer_config.py).
TrainerTable = Annotated[dict[str, Any], AfterValidator(_valid_trainer)]

# What a notifier can be told; `notify_on` picks among them (default: NOTIFY_ON).
NotifyEvent = Literal["blocked", "done", "attempt_error", "interrupted", "passed", "failed"]


def _int_as_float(value: Any) -> Any:
    # strict mode would refuse `timeout = 3` with a type error; let the range check speak
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _in_range(kind: str, value: float) -> float:
    # a timeout in its range (defaults.TIMEOUT_RANGES); the ValueError says which
    if (problem := seconds_problem(value, kind, quote=False)) is not None:
        raise ValueError(problem)
    return value


Float = Annotated[float, BeforeValidator(_int_as_float)]  # `= 2` is a float setting too
BotSeconds = Annotated[Float, AfterValidator(lambda v: _in_range("bot", v))]
NotifySeconds = Annotated[Float, AfterValidator(lambda v: _in_range("notify", v))]
RaySeconds = Annotated[Float, AfterValidator(lambda v: _in_range("ray", v))]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


MAX_CANDIDATES = 64  # `candidates = K` (docs/SCALING.md): a typo never submits 1000 jobs


class ExecReference(_Strict):
    """``reference_bot = {exec = ["./mybot", "--level", "3"]}``: a program speaking the
    cosmic-bot protocol, run in the workspace (an argv list, never a shell string)."""

    exec: list[Arg] = Field(min_length=1)
    timeout: BotSeconds = BOT_TIMEOUT_SECONDS

    @field_validator("exec")
    @classmethod
    def _program_named(cls, value: list[str]) -> list[str]:
        if not value[0].strip():
            raise ValueError("the program (first element) is empty; name the bot's program")
        return value

    def definition(self) -> dict[str, Any]:
        """What identifies this reference in the stage definitions (config hash)."""
        return {"exec": list(self.exec)}


class BuiltinReference(_Strict):
    """``reference_bot = {builtin = "random"}``: uniformly random actions over the stage's
    action space (Gymnasium stages; the arena refuses it at preflight)."""

    builtin: Literal["random"]

    def definition(self) -> dict[str, Any]:
        return {"builtin": self.builtin}


def _reference_kind(value: Any) -> str:
    if isinstance(value, BuiltinReference) or (isinstance(value, dict) and "builtin" in value):
        return "builtin"
    return "exec" if isinstance(value, dict | ExecReference) else "path"


# A reference bot: a bot file's path, an exec table or a builtin one. The tag (a union
# member's name) is dropped from error locations by config_errors.describe.
ReferenceBot = Annotated[
    Annotated[Arg, Tag("path")]
    | Annotated[ExecReference, Tag("exec")]
    | Annotated[BuiltinReference, Tag("builtin")],
    Discriminator(_reference_kind),
]


class Defaults(_Strict):
    """Budgets for every stage; the `run` options override them."""

    timesteps: int = Field(STAGE_TIMESTEPS, gt=0)
    n_parallel: int = Field(N_PARALLEL, gt=0)
    speedup: int = Field(DECISION_TICKS, gt=0)


class StageConfig(_Strict):
    """One stage: its name, the trainer flags that make it, and optional overrides."""

    name: str
    flags: list[Arg] = Field(default_factory=list)
    timesteps: int | None = Field(None, gt=0)
    reference_bot: ReferenceBot | None = None
    gate: dict[str, Any] | None = None
    candidates: int | None = Field(None, ge=1, le=MAX_CANDIDATES)
    env: EnvOverride | None = None  # the keys of [env] this stage replaces
    trainer: TrainerTable | None = None  # the keys of [trainer] this stage replaces

    @field_validator("name")
    @classmethod
    def _name_is_a_safe_path_part(cls, value: str) -> str:
        if not STAGE_NAME_RE.fullmatch(value):
            raise ValueError(
                f"stage name {value!r} may only contain a-z, 0-9, '_' and '-' "
                "(it becomes part of file names)"
            )
        return value

    @field_validator("gate")
    @classmethod
    def _gate_override_is_valid(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            GateSettings(**value)  # raises with the field named
        return value


class LauncherConfig(_Strict):
    """Where trainings run (`[launcher]`): this machine, or a Ray cluster (docs/SCALING.md).

    ``address``: the Ray dashboard (Jobs API); empty: ``RAY_ADDRESS``, then a local ``ray
    start --head`` (``http://127.0.0.1:8265``), never a cluster started silently. ``num_gpus``,
    ``num_cpus``, ``memory`` (bytes): what each training asks for; ``env``: its extra
    environment (either launcher); ``request_timeout``: per call; ``max_continuations``: the
    relaunches of one training that a time limit or preemption ended (docs/SCALING.md)."""

    kind: Literal["local", "ray"] = LAUNCHER_KIND
    address: Arg | None = None
    num_gpus: Float = Field(RAY_NUM_GPUS, ge=0.0)
    num_cpus: Float = Field(RAY_NUM_CPUS, ge=0.0)
    memory: int | None = Field(None, gt=0)
    env: dict[str, Arg] = Field(default_factory=dict)
    request_timeout: RaySeconds = RAY_REQUEST_TIMEOUT_SECONDS
    max_parallel: int | None = Field(None, ge=1)
    max_continuations: int = Field(MAX_CONTINUATIONS, ge=0)
    # The evaluation_command as a Ray Job too (the built-in evaluator always runs here).
    evaluate_remote: bool = False

    @field_validator("evaluate_remote")
    @classmethod
    def _remote_needs_ray(cls, value: bool, info: ValidationInfo) -> bool:
        if value and info.data.get("kind") != "ray":
            raise ValueError(
                "evaluate_remote = true sends the evaluation_command to a Ray cluster: it "
                'needs kind = "ray" (or set evaluate_remote = false)'
            )
        return value


class CurriculumConfig(_Strict):
    """The whole of `stages.toml`."""

    max_retries: int = Field(MAX_RETRIES, ge=0)
    eval_episodes: int = Field(EVAL_EPISODES, ge=2)
    regression_margin: Float = Field(REGRESSION_MARGIN, gt=0.0, lt=1.0)
    standing_args: list[Arg] = Field(default_factory=lambda: list(STANDING_ARGS))
    reference_bot: ReferenceBot = REFERENCE_BOT
    training_command: list[Arg] = Field(
        default_factory=lambda: list(TRAINING_COMMAND), min_length=1
    )
    evaluation_command: list[Arg] | None = Field(None, min_length=1)
    notify_command: list[Arg] | None = Field(None, min_length=1)
    notify_on: list[NotifyEvent] = Field(default_factory=lambda: list[NotifyEvent](NOTIFY_ON))
    notify_timeout: NotifySeconds = NOTIFY_TIMEOUT_SECONDS
    candidates: int = Field(CANDIDATES, ge=1, le=MAX_CANDIDATES)
    defaults: Defaults = Field(default_factory=Defaults)
    gate: dict[str, Any] = Field(default_factory=dict)
    env: EnvSpec | None = None  # before `stages`: their check merges it
    trainer: TrainerTable | None = None
    stages: list[StageConfig] = Field(min_length=1)
    launcher: LauncherConfig = Field(default_factory=LauncherConfig)
    tracking: dict[str, Any] = Field(default_factory=dict)  # checked by tracking_config
    path: Path = Field(Path("stages.toml"), exclude=True)

    @model_validator(mode="after")
    def _whole_file_checks(self) -> CurriculumConfig:
        # The trainer tables, owned flags, name lengths, the launcher's address and env.
        from cosmic_curriculum.workspace.config_checks import check_whole_config

        check_whole_config(self)
        return self

    @field_validator("gate")
    @classmethod
    def _gate_table_is_valid(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key in ("episodes", "regression_margin"):
            if key in value:
                top = "eval_episodes" if key == "episodes" else key
                raise ValueError(f"set '{top}' at the top level of the file, not in [gate]")
        GateSettings(**value)
        return value

    @field_validator("launcher")
    @classmethod
    def _remote_evaluation_needs_a_command(
        cls, value: LauncherConfig, info: ValidationInfo
    ) -> LauncherConfig:
        if value.evaluate_remote and not info.data.get("evaluation_command"):
            raise ValueError(
                "evaluate_remote = true needs an evaluation_command: the built-in evaluator "
                "always runs on this machine (it takes about a second); set one or remove "
                "evaluate_remote"
            )
        return value

    @field_validator("stages")
    @classmethod
    def _stage_names_unique(cls, value: list[StageConfig]) -> list[StageConfig]:
        seen: set[str] = set()
        for stage in value:
            if stage.name in seen:
                raise ValueError(f"stage name {stage.name!r} is used twice; names must be unique")
            seen.add(stage.name)
        return value

    @field_validator("stages")
    @classmethod
    def _stage_envs_complete(cls, value: list[StageConfig], info: ValidationInfo) -> Any:
        check_envs(info.data.get("env"), [(s.name, s.env) for s in value])
        return value

    # -- effective settings -------------------------------------------------------------

    def stage_gate(self, index: int) -> GateSettings:
        """The gate of stage ``index``: top-level episodes/margin, then [gate], then the stage's."""
        merged: dict[str, Any] = {
            "episodes": self.eval_episodes,
            "regression_margin": self.regression_margin,
            **self.gate,
            **(self.stages[index].gate or {}),
        }
        return GateSettings(**merged)

    def stage_timesteps(self, index: int, override: int | None = None) -> int:
        """Stage ``index``'s timesteps: `--timesteps`, else the stage's own, else [defaults]."""
        if override is not None:
            return override
        return self.stages[index].timesteps or self.defaults.timesteps

    def stage_env(self, index: int) -> EnvSpec:
        """Stage ``index``'s environment: [env], with the stage's own ``env`` keys over it."""
        return merged_env(self.env, self.stages[index].env)

    def stage_standing_args(self, index: int) -> list[str]:
        """The standing args of stage ``index``: the arena's defaults reach no other kind."""
        own = self.stage_env(index).kind == "arena" or "standing_args" in self.model_fields_set
        return list(self.standing_args) if own else []

    def stage_candidates(self, index: int) -> int:
        """How many candidates each attempt of stage ``index`` trains: the stage's
        ``candidates``, else the top-level one."""
        own = self.stages[index].candidates
        return own if own is not None else self.candidates

    def max_parallel(self, candidates: int) -> int:
        """How many of an attempt's ``candidates`` trainings run at once."""
        cap = self.launcher.max_parallel
        return candidates if cap is None else min(cap, candidates)

    def builtin_env_trainer(self, index: int) -> bool:
        """Whether stage ``index`` trains with the built-in `train-env`: a Gymnasium stage
        of a file that sets no training_command (the arena's default is not for it)."""
        own = "training_command" in self.model_fields_set
        return not own and self.stage_env(index).kind == "gymnasium"

    def stage_trainer(self, index: int) -> TrainerConfig:
        """Stage ``index``'s trainer: [trainer] with the stage's keys (trainer_config)."""
        from cosmic_curriculum.workspace.trainer_config import TrainerConfig, merged_trainer

        base, own = self.trainer, self.stages[index].trainer
        return merged_trainer(
            None if base is None else TrainerConfig.model_validate(base),
            None if own is None else TrainerConfig.model_validate(own),
        )

    def stage_reference(self, index: int) -> str | ExecReference | BuiltinReference | None:
        """The reference bot configured for stage ``index`` (None: previous stage's bot)."""
        stage = self.stages[index]
        if stage.reference_bot is not None:
            return stage.reference_bot
        return self.reference_bot if index == 0 else None

    def stage_definitions(self) -> list[dict[str, Any]]:
        """What defines each stage's result; a change to a finished stage needs consent."""
        return [
            {
                "name": stage.name,
                "flags": list(stage.flags),
                "standing_args": self.stage_standing_args(i),
                "timesteps": self.stage_timesteps(i),
                "reference_bot": _reference_definition(self.stage_reference(i)),
                "gate": self.stage_gate(i).definition(),
                # Only when configured: the hashes of workspaces without [env] stay.
                **({"env": self.stage_env(i).model_dump()} if self.env or stage.env else {}),
                **(
                    {"trainer": self.stage_trainer(i).definition()}
                    if self.trainer is not None or stage.trainer is not None
                    else {}
                ),
            }
            for i, stage in enumerate(self.stages)
        ]

    def stage_hashes(self) -> list[str]:
        return [_digest(d) for d in self.stage_definitions()]

    def config_hash(self) -> str:
        return _digest(self.stage_definitions())


def _reference_definition(reference: str | ExecReference | BuiltinReference | None) -> Any:
    # A path stays a plain string, so existing workspaces keep their config hashes.
    if isinstance(reference, ExecReference | BuiltinReference):
        return reference.definition()
    return reference


def _digest(obj: Any) -> str:
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:16]
