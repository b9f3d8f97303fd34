"""`train-env`'s options for a pettingzoo game (the self-play league), checked: each
fault one line naming the option, its value and the fix, before any training."""

from __future__ import annotations

from dataclasses import dataclass

from cosmic_curriculum.defaults import (
    GAME_CLONE_EPOCHS,
    GAME_CLONE_POSITIONS,
    GAME_LEAGUE_BOT_SHARE,
    GAME_MOVE_CAP,
    GAME_OPPONENT_MODE,
    GAME_PFSP_WEIGHTING,
    GAME_POOL_SIZE,
    GAME_SAMPLING,
    GAME_SNAPSHOT_EVERY_TIMESTEPS,
)
from cosmic_curriculum.envs.game_players import BUILTIN_PREFIX, RANDOM
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.train.env_run import EnvTrainSettings
from cosmic_curriculum.train.league import (
    SAMPLINGS,
    WEIGHTINGS,
    LeagueRule,
    Sampling,
    Weighting,
)

OPPONENT_MODES = ("random", "self_play", "pool", "bot:<spec>")


@dataclass(frozen=True)
class LeagueOptions:
    """The league's options as given (None: the default)."""

    opponent_mode: str | None = None
    snapshot_every: int | None = None
    pool_size: int | None = None
    sampling: str | None = None
    weighting: str | None = None
    league_bots: tuple[str, ...] = ()
    bot_share: float | None = None
    move_cap: int | None = None
    clone_teacher: str | None = None
    clone_positions: int | None = None
    clone_epochs: int | None = None

    def given(self) -> str | None:
        """The first option set on the command line (for kinds that take none)."""
        names = {
            "--opponent-mode": self.opponent_mode,
            "--snapshot-every": self.snapshot_every,
            "--pool-size": self.pool_size,
            "--sampling": self.sampling,
            "--pfsp-weighting": self.weighting,
            "--league-bot": self.league_bots or None,
            "--league-bot-share": self.bot_share,
            "--move-cap": self.move_cap,
            "--clone-teacher": self.clone_teacher,
            "--clone-positions": self.clone_positions,
            "--clone-epochs": self.clone_epochs,
        }
        return next((k for k, v in names.items() if v is not None), None)


@dataclass(frozen=True)
class CloneSettings:
    """``--clone-teacher``: the teacher's moves learned before the first rollout."""

    teacher: str  # search:N or a bot file of the game
    positions: int
    epochs: int


@dataclass(frozen=True)
class GameTrainSettings:
    base: EnvTrainSettings  # experiment, budget, env spec, algorithm, checkpoints
    rule: LeagueRule
    mode: str  # random | self_play | pool | bot
    snapshot_every: int
    move_cap: int
    clone: CloneSettings | None = None


def league_rule(options: LeagueOptions) -> tuple[str, LeagueRule]:
    """The opponent mode and the league's rule, or a one-line ConfigError."""
    mode = options.opponent_mode or GAME_OPPONENT_MODE
    bots = tuple(options.league_bots)
    share = GAME_LEAGUE_BOT_SHARE if options.bot_share is None else options.bot_share
    if not 0.0 <= share <= 1.0:
        raise ConfigError(f"--league-bot-share {share:g}: must be between 0 and 1")
    pool_size = GAME_POOL_SIZE if options.pool_size is None else options.pool_size
    if pool_size < 1:
        raise ConfigError(f"--pool-size {pool_size}: must be >= 1")
    sampling = _sampling(options.sampling or GAME_SAMPLING)
    weighting = _weighting(options.weighting or GAME_PFSP_WEIGHTING)
    if any(not b.strip() for b in bots):
        raise ConfigError("--league-bot '': pass random or a bots/EXP.json of this game")
    if mode == "random" or mode.startswith("bot:"):
        bot = "random" if mode == "random" else mode[4:]
        if not bot.strip():
            raise ConfigError(
                f"--opponent-mode {mode!r}: name the bot, e.g. bot:random or "
                "bot:bots/curric-s1-random.json"
            )
        fixed = LeagueRule(0, "latest", bots=(bot,), bot_share=1.0)
        return ("random" if mode == "random" else "bot"), fixed
    if mode == "self_play":
        return mode, LeagueRule(1, "latest", weighting, bots, share if bots else 0.0)
    if mode == "pool":
        return mode, LeagueRule(pool_size, sampling, weighting, bots, share if bots else 0.0)
    raise ConfigError(f"--opponent-mode {mode!r}: choose one of {' | '.join(OPPONENT_MODES)}")


def _sampling(value: str) -> Sampling:
    for known in SAMPLINGS:
        if value == known:
            return known
    raise ConfigError(f"--sampling {value!r}: choose one of {', '.join(SAMPLINGS)}")


def _weighting(value: str) -> Weighting:
    for known in WEIGHTINGS:
        if value == known:
            return known
    raise ConfigError(f"--pfsp-weighting {value!r}: choose one of {', '.join(WEIGHTINGS)}")


def league_settings(base: EnvTrainSettings, options: LeagueOptions) -> GameTrainSettings:
    mode, rule = league_rule(options)
    every = (
        GAME_SNAPSHOT_EVERY_TIMESTEPS if options.snapshot_every is None else options.snapshot_every
    )
    if every < 1:
        raise ConfigError(f"--snapshot-every {every}: must be >= 1 timestep")
    cap = GAME_MOVE_CAP if options.move_cap is None else options.move_cap
    if cap < 1:
        raise ConfigError(f"--move-cap {cap}: must be >= 1 move")
    return GameTrainSettings(base, rule, mode, every, cap, clone_settings(options))


def clone_settings(options: LeagueOptions) -> CloneSettings | None:
    """``--clone-*`` checked (a teacher's file is the trainer's to find), or None."""
    teacher = options.clone_teacher
    if teacher is None:
        for name, value in (
            ("--clone-positions", options.clone_positions),
            ("--clone-epochs", options.clone_epochs),
        ):
            if value is not None:
                raise ConfigError(
                    f"{name} {value}: it sizes --clone-teacher's lesson; name the teacher"
                )
        return None
    spelled = teacher.strip().removeprefix(BUILTIN_PREFIX)
    if not spelled or spelled == RANDOM or spelled.startswith("exec:"):
        raise ConfigError(
            f"--clone-teacher {teacher!r}: name search:N or a bot file of this game, e.g. "
            "search:2 (random teaches nothing; a program plays only in evaluate)"
        )
    positions = GAME_CLONE_POSITIONS if options.clone_positions is None else options.clone_positions
    if positions < 1:
        raise ConfigError(f"--clone-positions {positions}: must be >= 1")
    epochs = GAME_CLONE_EPOCHS if options.clone_epochs is None else options.clone_epochs
    if epochs < 1:
        raise ConfigError(f"--clone-epochs {epochs}: must be >= 1")
    return CloneSettings(teacher, positions, epochs)
