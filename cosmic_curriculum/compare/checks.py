"""What `compare` refuses before it makes an arm, one line each (pure but for reading a
reference bot's path): a stage whose checkpoints compare cannot read, and an arena
reference that is not a bot file."""

from __future__ import annotations

from pathlib import Path

from cosmic_curriculum.defaults import TRAINING_COMMAND
from cosmic_curriculum.workspace.config import CurriculumConfig


def trainer_problem(config: CurriculumConfig, index: int, kind: str) -> str | None:
    """Why stage ``index``'s checkpoints cannot be measured on a last stage of ``kind``
    (None: they can): compare reads the built-in trainers' SB3 checkpoints."""
    name = config.stages[index].name
    own = config.stage_env(index).kind
    if own != kind:
        return (
            f"stages.toml: stage {name!r} is of kind {own} and the last stage of kind {kind}; "
            "compare measures every arm on the last stage, so every stage it trains must be "
            "of the last stage's kind"
        )
    if kind in ("gymnasium", "pettingzoo") and not config.builtin_env_trainer(index):
        return (
            f"stages.toml: stage {name!r} is trained by training_command "
            f"{config.training_command!r}; compare reads the checkpoints of the built-in "
            "train-env only: remove training_command"
        )
    if kind == "arena" and list(config.training_command) != list(TRAINING_COMMAND):
        return (
            f"stages.toml: training_command {config.training_command!r}: compare reads the "
            f"checkpoints of the built-in arena trainer only ({' '.join(TRAINING_COMMAND)}); "
            "set it back or remove it"
        )
    return None


def arena_reference(config: CurriculumConfig, ws: Path, last: int) -> Path:
    """The bot every arena checkpoint plays: the last stage's own reference_bot, else the
    curriculum's (the previous stage's bot, the last stage's gate reference, differs from
    arm to arm)."""
    from cosmic_curriculum.errors import ConfigError

    ref = config.stage_reference(last) or config.reference_bot
    if not isinstance(ref, str):
        raise ConfigError(
            f"stages.toml: reference_bot = {ref!r}: compare plays an arena arm's checkpoints "
            'against a bot file; set the last stage\'s reference_bot = "bots/rookie.json"'
        )
    return _bot_file(ref, ws)


def game_reference(config: CurriculumConfig, ws: Path, last: int) -> str | Path:
    """What every game checkpoint plays: the last stage's own reference_bot, else the
    curriculum's, as the game evaluator names it (``random``, ``search:N``) or a bot file."""
    from cosmic_curriculum.errors import ConfigError
    from cosmic_curriculum.workspace.env_config import BuiltinReference

    ref = config.stage_reference(last) or config.reference_bot
    if isinstance(ref, BuiltinReference):
        return ref.builtin if ref.depth is None else f"{ref.builtin}:{ref.depth}"
    if not isinstance(ref, str):
        raise ConfigError(
            f"stages.toml: reference_bot = {ref.definition()!r}: compare plays a game arm's "
            "checkpoints against a bot file, random or search:N; set the last stage's "
            'reference_bot = {builtin = "search", depth = 2} (or a bot file)'
        )
    return _bot_file(ref, ws)


def _bot_file(ref: str, ws: Path) -> Path:
    from cosmic_curriculum.errors import ConfigError

    path = Path(ref) if Path(ref).is_absolute() else ws / ref
    if not path.is_file():
        raise ConfigError(
            f"stages.toml: reference_bot {ref!r}: no such bot file in {ws}; name a bot file "
            "(e.g. bots/rookie.json)"
        )
    return path
