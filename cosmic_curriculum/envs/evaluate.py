"""The built-in evaluator of Gymnasium stages: a candidate env bot against a reference.

Both play the candidate's env (the stage being gated) on the same episode seeds, fresh
for each evaluation (drawn from its ``seed``); on each seed the higher return wins the
pair, equal returns draw: ``wins_a`` (candidate), ``wins_b`` (reference), ``draws``.

An episode of the candidate **succeeds** when the last ``info["is_success"]`` it saw is
true; an env that never reports it succeeds when the return reaches the gate's
``success_return`` if set, else when the return is > 0 (FrozenLake's goal). An episode
cut at the step cap (the env's own TimeLimit, else ``ENV_MAX_EPISODE_STEPS``) fails.
The record also holds ``successes``, ``returns`` (the candidate's, one per episode) and
the ``seeds``, so the threshold gate judges it too.

Candidate and reference are env bot files (or their ONNX twins); a reference may be
``random`` (uniform over the action space, seeded) or a program speaking ``cosmic-bot/1``
with the env's spaces (:mod:`.program_player`; the record counts its ``fallbacks``).
An env that raises, or returns a non-finite or wrongly shaped observation or a non-finite
reward, is one line (:mod:`.guard`), and no record is written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from cosmic_curriculum.defaults import ENV_EVAL_BATCH, ENV_MAX_EPISODE_STEPS
from cosmic_curriculum.envs import guard
from cosmic_curriculum.envs.gymnasium import make_env
from cosmic_curriculum.envs.onnx_twin import EnvTwin, load_env_player
from cosmic_curriculum.envs.policy import EnvBot
from cosmic_curriculum.envs.spaces import all_finite, batch_of, batch_size, same_space
from cosmic_curriculum.errors import CurriculumError, EvaluationError, TrainerError
from cosmic_curriculum.system.program import Command, command_label, command_sha256
from cosmic_curriculum.workspace.history import append_record

RANDOM = "random"
SUCCESS_RULE = (
    "the last info['is_success'] if the env reports it, else return >= success_return "
    "if set, else return > 0; an episode cut at the step cap fails"
)


class Player(Protocol):
    def act(self, obs: Any, deterministic: bool = True, rng: Any = None) -> Any: ...


# A reference: an env bot file (or twin), ``random``, or a program (``exec:``).
Reference = Path | str | Command


class RandomPlayer:
    """Uniform over the action space, from a seeded copy of it."""

    def __init__(self, space: Any, seed: int) -> None:
        self.space = space
        self.space.seed(seed)

    def act(self, obs: Any, deterministic: bool = True, rng: Any = None) -> list[Any]:
        return [self.space.sample() for _ in range(batch_size(obs))]


@dataclass(frozen=True)
class Episode:
    total: float
    success: bool
    cut: bool


def episode_seeds(seed: int, episodes: int) -> list[int]:
    """The evaluation's episode seeds: fresh per ``seed``, the same on a replay of it."""
    rng = np.random.default_rng(seed)
    return [int(s) for s in rng.integers(0, 2**31 - 1, size=episodes)]


def step_cap(env: Any) -> int:
    """The env's own TimeLimit, else the default cap."""
    return guard.step_cap(env, ENV_MAX_EPISODE_STEPS)


class EnvRunner:
    """Slots of one env spec, stepping a batch of episodes together."""

    def __init__(self, bot: EnvBot | EnvTwin, slots: int, success_return: float | None) -> None:
        self.name = bot.env.id or "?"
        self.envs = [make_env(bot.env) for _ in range(slots)]
        self.cap = step_cap(self.envs[0])
        self.success_return = success_return
        self.discrete = type(self.envs[0].action_space).__name__ == "Discrete"
        self.shape = guard.space_shape(self.envs[0].observation_space)

    def close(self) -> None:
        for env in self.envs:
            env.close()

    def _fail(self, what: str, seed: int, exc: BaseException | None = None) -> EvaluationError:
        cause = f" ({guard.one_line(exc)})" if exc else ""
        return EvaluationError(
            f"env {self.name!r} {what} on episode seed {seed}{cause}; fix the env or the "
            "stage's env spec"
        )

    def _observation(self, obs: Any, seed: int) -> Any:
        fault = guard.observation_fault(obs, self.shape)
        if fault is None and self.shape is None and not all_finite(obs):  # a Dict's parts
            fault = "returned a non-finite or non-numeric observation"
        if fault is not None:
            raise self._fail(fault, seed)
        return obs

    def play(
        self, player: Player, seeds: Sequence[int], deterministic: bool, rng: Any
    ) -> list[Episode]:
        """One episode per seed, ``len(self.envs)`` at a time."""
        episodes: list[Episode] = []
        for start in range(0, len(seeds), len(self.envs)):
            episodes += self._batch(
                player, seeds[start : start + len(self.envs)], deterministic, rng
            )
        return episodes

    def _batch(
        self, player: Player, seeds: Sequence[int], deterministic: bool, rng: Any
    ) -> list[Episode]:
        n = len(seeds)
        obs: list[Any] = []
        for env, seed in zip(self.envs, seeds, strict=False):
            try:
                first, _ = env.reset(seed=seed)
            except Exception as exc:
                raise self._fail("raised during reset", seed, exc) from None
            obs.append(self._observation(first, seed))
        totals, steps = [0.0] * n, [0] * n
        success: list[bool | None] = [None] * n
        done, cut = [False] * n, [False] * n
        while not all(done):
            live = [i for i in range(n) if not done[i]]
            actions = player.act(batch_of([obs[i] for i in live]), deterministic, rng)
            for i, action in zip(live, actions, strict=True):
                act = int(action) if self.discrete else np.asarray(action)
                try:
                    nxt, reward, terminated, truncated, info = self.envs[i].step(act)
                except Exception as exc:
                    raise self._fail("raised during step", seeds[i], exc) from None
                obs[i] = self._observation(nxt, seeds[i])
                fault = guard.reward_fault(reward)
                if fault is not None:
                    raise self._fail(fault, seeds[i])
                totals[i] += float(reward)
                steps[i] += 1
                if isinstance(info, dict) and "is_success" in info:
                    success[i] = bool(info["is_success"])
                if terminated or truncated:
                    done[i] = True
                elif steps[i] >= self.cap:  # an env that never ends is cut: a failure
                    done[i] = cut[i] = True
        return [self._episode(totals[i], success[i], cut[i]) for i in range(n)]

    def _episode(self, total: float, reported: bool | None, cut: bool) -> Episode:
        if cut:
            return Episode(total, False, True)
        if reported is not None:
            return Episode(total, reported, False)
        if self.success_return is not None:
            return Episode(total, total >= self.success_return, False)
        return Episode(total, total > 0.0, False)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _reference_player(
    reference: Reference, candidate: EnvBot | EnvTwin, runner: EnvRunner, seed: int
) -> Player:
    if not isinstance(reference, Path | str):
        from cosmic_curriculum.envs.program_player import program_player

        env = runner.envs[0]
        return program_player(reference, env.observation_space, env.action_space, env=runner.name)
    if str(reference) == RANDOM:
        return RandomPlayer(runner.envs[0].action_space, seed)
    bot = load_env_player(Path(reference))
    for what in ("observation_space", "action_space"):
        if getattr(bot, what).to_json() != getattr(candidate, what).to_json():
            raise EvaluationError(
                f"{reference}: its {what} is not the candidate's; a reference must play "
                'the same spaces (use the previous stage\'s bot or {builtin = "random"})'
            )
    return bot


def _check_spaces(bot: EnvBot | EnvTwin, env: Any, path: Path) -> None:
    from cosmic_curriculum.envs.export import space_of

    try:
        spaces = (
            space_of(env.observation_space, "observation", allow_dict=True),
            space_of(env.action_space, "action"),
        )
    except TrainerError as exc:
        raise EvaluationError(f"{path}: {exc}") from None
    if not (
        same_space(spaces[0], bot.observation_space) and same_space(spaces[1], bot.action_space)
    ):
        raise EvaluationError(
            f"{path}: the bot's spaces are not those of its env {bot.env.id!r} as it builds "
            "now; retrain the bot or restore the env's version"
        )


# An env record lists every episode's seed and return, and the players keep each episode
# until the record is written: the count is bounded so its memory and JSON are.
MAX_ENV_EPISODES = 100_000


def check_env_episodes(count: int, option: str) -> int:
    """``count`` episodes (seeds) of an env evaluation or ladder match, within bounds."""
    if count < 1:
        raise EvaluationError(f"{option} {count}: an evaluation plays at least 1 episode")
    if count > MAX_ENV_EPISODES:
        raise EvaluationError(
            f"{option} {count}: at most {MAX_ENV_EPISODES:,} episodes (each one's seed and "
            "return are kept and recorded); evaluate in several records"
        )
    return count


def evaluate_env(
    candidate: Path,
    reference: Reference,
    *,
    history_path: Path,
    episodes: int,
    seed: int,
    success_return: float | None = None,
    deterministic: bool = True,
    stop: Callable[[dict[str, Any]], bool] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Play ``episodes`` seeds (fewer when ``stop(counts so far)`` says the gate has
    decided), append one record to ``history_path`` and return it as stored."""
    check_env_episodes(episodes, "episodes")
    bot = load_env_player(candidate)
    seeds = episode_seeds(seed, episodes)
    try:
        runner = EnvRunner(bot, min(ENV_EVAL_BATCH, episodes), success_return)
    except CurriculumError as exc:
        raise EvaluationError(f"{candidate}: its env does not build ({exc})") from None
    other: Player | None = None
    try:
        _check_spaces(bot, runner.envs[0], candidate)
        other = _reference_player(reference, bot, runner, seed)
        rng_a, rng_b = np.random.default_rng([seed, 1]), np.random.default_rng([seed, 2])
        mine: list[Episode] = []
        theirs: list[Episode] = []
        record: dict[str, Any] = {}
        for start in range(0, episodes, ENV_EVAL_BATCH):
            chunk = seeds[start : start + ENV_EVAL_BATCH]
            mine += runner.play(bot, chunk, deterministic, rng_a)
            theirs += runner.play(other, chunk, deterministic, rng_b)
            record = pair_counts(mine, theirs)
            if on_progress is not None:
                on_progress(len(mine), episodes)
            if stop is not None and len(mine) < episodes and stop(record):
                break
    finally:
        runner.close()
        close = getattr(other, "close", None)  # a program: its whole tree stops here
        if close is not None:
            close()
    program = None if isinstance(reference, Path | str) else reference
    ref_label = str(reference) if program is None else command_label(program)
    record.update(
        {
            "evaluator": "env",
            "candidate": str(candidate),
            "reference": ref_label,
            "env": bot.env.id,
            "seed": seed,
            "seeds": seeds[: len(mine)],
            "deterministic": deterministic,
            "max_steps": runner.cap,
            "cut_episodes": sum(e.cut for e in mine),
            "success_rule": SUCCESS_RULE,
            "success_return": success_return,
            "reference_returns": [e.total for e in theirs],
            "candidate_sha256": _sha256(candidate),
        }
    )
    if program is not None:
        record["reference_sha256"] = command_sha256(program)
        record["reference_fallbacks"] = getattr(other, "fallbacks", 0)
    elif ref_label != RANDOM:
        record["reference_sha256"] = _sha256(Path(str(reference)))
    record.update(extra or {})
    return append_record(history_path, record)


def pair_counts(mine: list[Episode], theirs: list[Episode]) -> dict[str, Any]:
    wins_a = sum(a.total > b.total for a, b in zip(mine, theirs, strict=True))
    wins_b = sum(b.total > a.total for a, b in zip(mine, theirs, strict=True))
    return {
        "wins_a": wins_a,
        "wins_b": wins_b,
        "draws": len(mine) - wins_a - wins_b,
        "episodes": len(mine),
        "successes": sum(e.success for e in mine),
        "returns": [e.total for e in mine],
    }
