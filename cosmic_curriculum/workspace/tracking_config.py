"""`[tracking]` of `stages.toml`: the experiment trackers a run logs to (docs/TRACKING.md).

``tensorboard`` (default: on when tensorboard is installed), ``mlflow = {tracking_uri,
experiment}`` and ``wandb = {project, mode, entity, group, tags, dir}``; ``timeout`` bounds
each delivery. No secret belongs here: the file is committed to git, so a tracking_uri
with a password in it is refused (credentials come from the environment).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cosmic_curriculum.defaults import (
    MLFLOW_EXPERIMENT,
    MLFLOW_TRACKING_URI,
    TRACKING_TENSORBOARD,
    TRACKING_TIMEOUT_SECONDS,
    WANDB_MODE,
    WANDB_PROJECT,
    seconds_problem,
)
from cosmic_curriculum.workspace.config_errors import SECRET_NOT_SHOWN

if TYPE_CHECKING:
    from cosmic_curriculum.workspace.config import CurriculumConfig


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _text(value: str) -> str:
    if not value.strip() or "\0" in value:
        raise ValueError(f"{value!r} must be a non-empty string without NUL characters")
    return value


class MlflowTracking(_Strict):
    tracking_uri: str = MLFLOW_TRACKING_URI
    experiment: str = MLFLOW_EXPERIMENT

    @field_validator("experiment")
    @classmethod
    def _named(cls, value: str) -> str:
        return _text(value)

    @field_validator("tracking_uri")
    @classmethod
    def _no_secret(cls, value: str) -> str:
        _text(value)
        if urlsplit(value).password is not None:
            raise ValueError(
                "holds a password, and stages.toml is committed to git; remove it from the "
                "URI and set MLFLOW_TRACKING_USERNAME / MLFLOW_TRACKING_PASSWORD (or "
                "MLFLOW_TRACKING_TOKEN) in the run's environment "
                f"{SECRET_NOT_SHOWN}"
            )
        return value


class WandbTracking(_Strict):
    project: str = WANDB_PROJECT
    mode: Literal["online", "offline", "disabled"] = WANDB_MODE
    entity: str | None = None
    group: str | None = None  # default: the workspace's directory name
    tags: list[str] = Field(default_factory=list)
    dir: str | None = None  # default: the workspace (W&B writes its wandb/ there)

    @field_validator("project", "entity", "group", "dir")
    @classmethod
    def _named(cls, value: str | None) -> str | None:
        return None if value is None else _text(value)


class TrackingConfig(_Strict):
    """`[tracking]`; every key optional. An empty table tracks with TensorBoard alone."""

    tensorboard: bool | None = TRACKING_TENSORBOARD
    mlflow: MlflowTracking | None = None
    wandb: WandbTracking | None = None
    timeout: float = TRACKING_TIMEOUT_SECONDS

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout_accepts_ints(cls, value: object) -> object:
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("timeout")
    @classmethod
    def _timeout_in_range(cls, value: float) -> float:
        # finite and bounded like every timeout (defaults.TIMEOUT_RANGES)
        if (problem := seconds_problem(value, "tracking", quote=False)) is not None:
            raise ValueError(problem)
        return value

    def remote(self) -> list[str]:
        """The trackers configured besides TensorBoard, in delivery order."""
        return [name for name in ("mlflow", "wandb") if getattr(self, name) is not None]


class _TrackingTable(_Strict):
    tracking: TrackingConfig


def check_tracking(table: dict[str, Any]) -> None:
    """Raises pydantic's ValidationError located at ``tracking.<key>``."""
    _TrackingTable.model_validate({"tracking": table})


def tracking_of(config: CurriculumConfig) -> TrackingConfig:
    """The `[tracking]` of a loaded config (checked when it was loaded)."""
    return TrackingConfig.model_validate(config.tracking)
