"""`[trainer]` of `stages.toml` and a stage's `trainer = {...}`: how `train-env` trains a
Gymnasium stage (docs/ENVIRONMENTS.md).

A stage's `trainer` replaces the keys it names, except `hyperparams`, which is merged key
by key (a stage changes one learning rate without repeating the rest; a key's value, a
`policy_kwargs` table too, is replaced whole). `hyperparams_file` is an rl-zoo3 YAML;
its entry sits under the merged keys: file < [trainer] hyperparams < the stage's.

`config.py` holds these tables as plain dicts checked by this module (imported when a
file has one), so reading the pure core does not load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, NamedTuple

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator
from pydantic_core import InitErrorDetails, ValidationError

from cosmic_curriculum.workspace.zoo_values import check_hyperparams, normalize_table

if TYPE_CHECKING:
    from cosmic_curriculum.workspace.config import CurriculumConfig

VecEnvKind = Literal["auto", "dummy", "subproc"]


class Algorithm(NamedTuple):
    package: str  # the module that has the class
    actions: tuple[str, ...]  # the Gymnasium action spaces it acts in


_ANY = ("Box", "Discrete", "MultiDiscrete", "MultiBinary")
SB3 = "stable_baselines3"
CONTRIB = "sb3_contrib"
# The algorithms train-env trains, those whose policies are plain MLPs (env bots replay
# them: envs/networks.py); sb3-contrib's need the `contrib` extra. Not CrossQ (its
# networks hold batch renormalization layers) or RecurrentPPO (an LSTM); MaskablePPO
# only on pettingzoo games with action masks (the game trainer gives it the masks).
ALGORITHMS: dict[str, Algorithm] = {
    "PPO": Algorithm(SB3, _ANY),
    "A2C": Algorithm(SB3, _ANY),
    "DQN": Algorithm(SB3, ("Discrete",)),
    "SAC": Algorithm(SB3, ("Box",)),
    "TD3": Algorithm(SB3, ("Box",)),
    "DDPG": Algorithm(SB3, ("Box",)),
    "TQC": Algorithm(CONTRIB, ("Box",)),
    "TRPO": Algorithm(CONTRIB, _ANY),
    "ARS": Algorithm(CONTRIB, ("Box", "Discrete")),
    "QRDQN": Algorithm(CONTRIB, ("Discrete",)),
    "MaskablePPO": Algorithm(CONTRIB, ("Discrete",)),
}


def canonical_algo(value: str) -> str:
    """The algorithm's own spelling of ``value`` (case does not matter); else ValueError."""
    found = next((name for name in ALGORITHMS if name.lower() == value.lower()), None)
    if found is None:
        raise ValueError(f"{value!r} is not an algorithm; choose one of {', '.join(ALGORITHMS)}")
    return found


def _hyperparams(value: dict[str, Any]) -> dict[str, Any]:
    return check_hyperparams(value)


def _policy_name(value: str) -> str:
    if not value.isidentifier():
        raise ValueError(f"{value!r} is not a policy name; name one, e.g. MlpPolicy")
    return value


class TrainerConfig(BaseModel):
    """`[trainer]`, or a stage's `trainer`: every key optional (None: not set here)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    algo: Annotated[str, AfterValidator(canonical_algo)] | None = None
    policy: Annotated[str, AfterValidator(_policy_name)] | None = None
    hyperparams: Annotated[dict[str, Any], AfterValidator(_hyperparams)] | None = None
    hyperparams_file: str | None = Field(None, min_length=1)
    # The entry of hyperparams_file to use (default: the stage's env id).
    hyperparams_key: str | None = Field(None, min_length=1)
    normalize: bool | dict[str, Any] | None = None
    n_envs: int | None = Field(None, ge=1)
    vec_env: VecEnvKind | None = None

    @field_validator("normalize")
    @classmethod
    def _normalize_is_a_table(cls, value: bool | dict[str, Any] | None) -> Any:
        if value is not None:
            normalize_table(value)
        return value

    @field_validator("hyperparams_file")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        if value is not None and "\0" in value:
            raise ValueError("contains a NUL character (\\0); remove it")
        return value

    def definition(self) -> dict[str, Any]:
        """What defines a stage's result: the keys that are set."""
        return self.model_dump(exclude_none=True)


def merged_trainer(base: TrainerConfig | None, stage: TrainerConfig | None) -> TrainerConfig:
    """A stage's trainer: ``base`` with ``stage``'s keys over it, hyperparams key by key."""
    if base is None or stage is None:
        return stage or base or TrainerConfig()
    merged = {**base.model_dump(exclude_none=True), **stage.model_dump(exclude_none=True)}
    if base.hyperparams is not None and stage.hyperparams is not None:
        merged["hyperparams"] = {**base.hyperparams, **stage.hyperparams}
    return TrainerConfig.model_validate(merged)


def valid_trainer_table(value: dict[str, Any]) -> dict[str, Any]:
    """A `[trainer]` table as written, checked (errors name the key inside it)."""
    TrainerConfig.model_validate(value)
    return value


def check_trainer_stages(config: CurriculumConfig) -> None:
    """A trainer table configures the built-in train-env: one on a stage another trainer
    trains (an own training_command, or an arena stage) would be ignored, so it is
    refused, the error at the table's key."""
    for i, stage in enumerate(config.stages):
        if (stage.trainer is None and config.trainer is None) or config.builtin_env_trainer(i):
            continue
        loc: tuple[str | int, ...] = (
            ("trainer",) if stage.trainer is None else ("stages", i, "trainer")
        )
        if "training_command" in config.model_fields_set:
            why = (
                "configures the built-in train-env, but this file sets training_command "
                "(that trainer gets the stage's flags instead); remove one of them"
            )
        else:
            why = (
                f"configures the built-in train-env of Gymnasium stages, but stage {i + 1} "
                f"{stage.name} is an arena stage; remove it, or make the stage's env "
                'kind = "gymnasium"'
            )
        error = InitErrorDetails(
            type="value_error", loc=loc, input=None, ctx={"error": ValueError(why)}
        )
        raise ValidationError.from_exception_data(type(config).__name__, [error])
