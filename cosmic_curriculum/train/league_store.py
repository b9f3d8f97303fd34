"""The league's I/O around its pure rules (``league.py``): the opponents' players, the
snapshots' files, and the league saved beside every checkpoint.

- A snapshot is the learner as a masked env bot, ``checkpoints/EXP/league/snap-<n>.json``,
  written atomically when it is taken and never changed (its name is its step count).
- ``step_<n>.league.json`` (beside ``step_<n>.zip``, written before it, so a checkpoint
  never lacks its league) holds the pool, the win-rate table and the sampler's rng;
  ``final.league.json`` beside ``final.zip``. A continuation from ``step_<n>.zip`` loads
  exactly that league; snapshot files no kept league names are pruned with the
  checkpoints.
- Fixed bots (``--league-bot``, ``--opponent-mode bot:<spec>``): the game players of
  ``envs/game_players.py``: ``random`` (uniform over the legal moves), ``search:N`` or an
  env bot file of the same game (e.g. an earlier stage's ``bots/EXP.json``).
"""

from __future__ import annotations

from pathlib import Path

from cosmic_curriculum.envs.game_players import RANDOM, builtin_name, game_player, search_depth
from cosmic_curriculum.envs.pettingzoo import GameInfo
from cosmic_curriculum.envs.policy import EnvBot, load_env_bot, save_env_bot
from cosmic_curriculum.errors import (
    ConfigError,
    CurriculumError,
    DamagedFileError,
    StateError,
    TrainerError,
)
from cosmic_curriculum.system.fsio import atomic_write_json, read_json
from cosmic_curriculum.train import league as rules
from cosmic_curriculum.train.game_env import Player

SNAPSHOT_DIR = "league"


def league_path(checkpoint: Path) -> Path:
    """The league saved with ``checkpoint`` (``X.zip``: ``X.league.json``)."""
    return checkpoint.with_name(f"{checkpoint.stem}.league.json")


def bot_player(
    text: str, info: GameInfo, seed: int, root: Path, option: str, wrapped: bool = False
) -> Player:
    """The fixed bot ``text`` names (``random``, ``search:N`` or an env bot file of this
    game, relative to the workspace); one line naming ``option`` when it is not one.
    ``wrapped``: the spec has wrappers of its own (a search then steps through them)."""
    name = builtin_name(text)
    if name is not None and name != RANDOM:
        try:  # named once, by the option: "--league-bot 'search:99': the depth must be..."
            search_depth(name, option)
        except CurriculumError as exc:
            raise ConfigError(str(exc)) from None
    if name is None and not Path(text).is_absolute():
        if not (root / text).is_file():
            raise ConfigError(
                f"{option} {text!r}: not random, search:N nor a bot file (no file "
                f"{root / text}); pass one of those, e.g. an earlier stage's bots/EXP.json"
            )
        text = str(root / text)
    try:
        player, _ = game_player(text, info, seed, plain=not wrapped)
    except CurriculumError as exc:
        said = str(exc)  # a bot file's fault begins with its path: not named twice
        raise ConfigError(
            f"{option} {said}" if said.startswith(text) else f"{option} {text!r}: {said}"
        ) from None
    return player


class League:
    """The league one training shares among its env copies (``game_env.Opponents``)."""

    def __init__(
        self,
        rule: rules.LeagueRule,
        state: rules.LeagueState,
        directory: Path,
        fixed: dict[str, Player],
    ) -> None:
        self.rule = rule
        self.state = state
        self.directory = directory  # checkpoints/EXP/league
        self.fixed = fixed
        self.players: dict[str, Player] = {}

    def player(self, name: str) -> Player:
        if name in self.fixed:
            return self.fixed[name]
        if name not in self.players:
            self.players[name] = load_env_bot(self.directory / f"{name}.json")
        return self.players[name]

    def draw(self) -> tuple[str, Player]:
        name = self.draw_name()
        return name, self.player(name)

    def draw_name(self) -> str:
        """The next opponent's name (its player is a game worker's to build)."""
        name, self.state = rules.sample(self.state, self.rule)
        return name

    def finished(self, name: str, reward: float) -> None:
        self.state = rules.recorded(self.state, self.rule, name, rules.outcome_of(reward))

    def snapshot(self, bot: EnvBot, timesteps: int) -> str:
        """``bot`` (the learner now) into the pool; its file written first."""
        if self.rule.pool_size == 0:
            return ""
        name = rules.snapshot_name(timesteps)
        self.directory.mkdir(parents=True, exist_ok=True)
        save_env_bot(bot, self.directory / f"{name}.json")
        self.state, evicted = rules.with_snapshot(self.state, name, self.rule.pool_size)
        self.players[name] = bot
        for gone in evicted:
            self.players.pop(gone, None)
        return name

    def save(self, checkpoint: Path) -> None:
        atomic_write_json(league_path(checkpoint), rules.to_json(self.state))

    def summary(self, count: int = 5) -> str:
        games = sum(r.games for r in self.state.table.values())
        upcoming = ", ".join(rules.peek(self.state, self.rule, count))
        return (
            f"{len(self.state.pool)} snapshots, {games} games in the table, next "
            f"opponents {upcoming}"
        )


def load_league(checkpoint: Path) -> rules.LeagueState:
    """The league saved with ``checkpoint``; missing or damaged: one line."""
    path = league_path(checkpoint)
    if not path.is_file():
        raise TrainerError(
            f"{path}: missing; the league of {checkpoint.name} was not saved with it, so "
            "the continuation cannot restore it; --resume another step checkpoint or "
            "train from scratch"
        )
    try:
        return rules.from_json(read_json(path, "league"))
    except DamagedFileError as exc:  # checkpoints are not committed: no copy in git
        raise TrainerError(f"{path}: {exc.fault}; --resume another step checkpoint") from None
    except StateError as exc:
        raise TrainerError(str(exc)) from None
    except ValueError as exc:
        raise TrainerError(f"{path}: {exc}; --resume another step checkpoint") from None


def check_snapshots(state: rules.LeagueState, directory: Path, checkpoint: Path) -> None:
    for name in state.pool:
        if not (directory / f"{name}.json").is_file():
            raise TrainerError(
                f"{directory / name}.json: missing, though the league of {checkpoint.name} "
                "has it in its pool; --resume another step checkpoint"
            )


def prune_snapshots(directory: Path, keep_leagues: list[Path], current: rules.LeagueState) -> None:
    """Snapshot files that neither a kept league file nor ``current`` names are removed."""
    if not directory.is_dir():
        return
    named = set(current.pool)
    for path in keep_leagues:
        try:
            named |= set(rules.from_json(read_json(path, "league")).pool)
        except (StateError, ValueError):
            return  # a damaged league is not a reason to lose snapshots: keep them all
    for snap in directory.glob("snap-*.json"):
        if snap.stem not in named:
            snap.unlink(missing_ok=True)
