"""The self-play league's rules, pure: data in, data out (the I/O is ``league_store.py``).

A league is a bounded pool of the learner's snapshots (oldest first), fixed bots mixed
in with a share, the learner's results against each opponent (wins, draws, losses from
the learner's seat) and the state of the sampler's random generator as plain data, so a
continuation that loads a saved league draws exactly the opponents the saved run would
have drawn next.

Opponents are sampled per episode: with probability ``bot_share`` one of the fixed bots
(uniformly), else a snapshot of the pool by ``sampling``: ``uniform``, ``latest``, or
``pfsp``, AlphaStar's prioritized fictitious self-play, which weights each snapshot by
f(p), p the learner's win rate against it: ``hard`` (1 - p)^2 (the opponents it loses
to), ``linear`` 1 - p, ``variance`` p(1 - p) (the opponents of its own strength). An
opponent never played counts p = 1/2 (one half game of prior), so every weight is > 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

import numpy as np

Sampling = Literal["uniform", "latest", "pfsp"]
Weighting = Literal["hard", "linear", "variance"]
Outcome = Literal["win", "draw", "loss"]
SAMPLINGS: tuple[Sampling, ...] = ("uniform", "latest", "pfsp")
WEIGHTINGS: tuple[Weighting, ...] = ("hard", "linear", "variance")
_OUTCOMES: tuple[Outcome, ...] = ("win", "draw", "loss")
LEAGUE_FORMAT = "cosmic-league/1"


@dataclass(frozen=True)
class LeagueRule:
    """How opponents are chosen (the trainer's options, fixed for a run)."""

    pool_size: int = 1
    sampling: Sampling = "latest"
    weighting: Weighting = "hard"
    bots: tuple[str, ...] = ()  # fixed opponents' names (their specs)
    bot_share: float = 0.0  # the chance an episode's opponent is one of ``bots``


@dataclass(frozen=True)
class Record:
    wins: int = 0
    draws: int = 0
    losses: int = 0

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    def to_json(self) -> list[int]:
        return [self.wins, self.draws, self.losses]


@dataclass(frozen=True)
class LeagueState:
    pool: tuple[str, ...] = ()  # snapshot names, oldest first
    table: Mapping[str, Record] = field(default_factory=dict)
    rng: Mapping[str, Any] = field(default_factory=dict)  # numpy PCG64 state


def new_state(seed: int) -> LeagueState:
    return LeagueState(rng=np.random.PCG64(seed).state)


def with_snapshot(
    state: LeagueState, name: str, pool_size: int
) -> tuple[LeagueState, tuple[str, ...]]:
    """``name`` added as the newest snapshot; the oldest beyond ``pool_size`` leave the
    pool (and the table): (the new state, the names evicted)."""
    if pool_size < 1:
        raise ValueError(f"pool size {pool_size}: must be >= 1")
    pool = (*(p for p in state.pool if p != name), name)
    evicted = pool[: max(0, len(pool) - pool_size)]
    table = {k: v for k, v in state.table.items() if k not in evicted}
    return replace(state, pool=pool[len(evicted) :], table=table), evicted


def win_rate(record: Record | None) -> float:
    """The learner's score against an opponent, with half a game of prior at 1/2."""
    if record is None:
        return 0.5
    return (record.wins + record.draws / 2 + 0.25) / (record.games + 0.5)


def pfsp_weight(p: float, weighting: Weighting) -> float:
    if weighting == "hard":
        return (1.0 - p) ** 2
    if weighting == "linear":
        return 1.0 - p
    return p * (1.0 - p)


def pfsp_weights(
    names: Sequence[str], table: Mapping[str, Record], weighting: Weighting
) -> tuple[float, ...]:
    """Each opponent's sampling probability under PFSP (they sum to 1)."""
    raw = [pfsp_weight(win_rate(table.get(n)), weighting) for n in names]
    total = sum(raw)
    return tuple(w / total for w in raw)


def _generator(rng: Mapping[str, Any]) -> tuple[np.random.Generator, np.random.PCG64]:
    bits = np.random.PCG64()
    bits.state = cast(Any, dict(rng))  # numpy's TypedDict: the file's plain dict
    return np.random.Generator(bits), bits


def sample(state: LeagueState, rule: LeagueRule) -> tuple[str, LeagueState]:
    """The next episode's opponent and the state after the draw (the rng advanced)."""
    if not state.pool and not rule.bots:
        raise ValueError("the league has no opponent: no snapshot and no fixed bot")
    gen, bits = _generator(state.rng)
    use_bot = bool(rule.bots) and (not state.pool or gen.random() < rule.bot_share)
    if use_bot:
        name = rule.bots[int(gen.integers(len(rule.bots)))]
    elif rule.sampling == "latest":
        name = state.pool[-1]
    elif rule.sampling == "uniform":
        name = state.pool[int(gen.integers(len(state.pool)))]
    else:
        weights = pfsp_weights(state.pool, state.table, rule.weighting)
        name = state.pool[int(gen.choice(len(state.pool), p=np.asarray(weights)))]
    return name, replace(state, rng=bits.state)


def peek(state: LeagueState, rule: LeagueRule, count: int) -> tuple[str, ...]:
    """The next ``count`` opponents ``sample`` would draw (results between draws aside)."""
    names = []
    for _ in range(count):
        name, state = sample(state, rule)
        names.append(name)
    return tuple(names)


def recorded(state: LeagueState, rule: LeagueRule, name: str, outcome: Outcome) -> LeagueState:
    """The learner's result against ``name`` added to the table. A snapshot evicted while
    its game was being played is not recorded (it left the league)."""
    if name not in state.pool and name not in rule.bots:
        return state
    old = state.table.get(name, Record())
    new = Record(
        old.wins + (outcome == "win"),
        old.draws + (outcome == "draw"),
        old.losses + (outcome == "loss"),
    )
    return replace(state, table={**state.table, name: new})


def outcome_of(reward: float) -> Outcome:
    """A zero-sum game's final reward from the learner's seat as its outcome."""
    return "win" if reward > 0 else ("loss" if reward < 0 else "draw")


def to_json(state: LeagueState) -> dict[str, Any]:
    return {
        "format": LEAGUE_FORMAT,
        "pool": list(state.pool),
        "table": {k: v.to_json() for k, v in sorted(state.table.items())},
        "rng": _plain(state.rng),
    }


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, np.integer):
        return int(value)
    return value


def from_json(document: Any) -> LeagueState:
    """A :class:`LeagueState` from its JSON; ``ValueError`` names the field at fault."""
    if not isinstance(document, dict) or document.get("format") != LEAGUE_FORMAT:
        raise ValueError(f"not a league file (format is not {LEAGUE_FORMAT!r})")
    pool = document.get("pool")
    if not isinstance(pool, list) or not all(isinstance(p, str) for p in pool):
        raise ValueError("pool must be a list of snapshot names")
    table_doc = document.get("table")
    if not isinstance(table_doc, dict):
        raise ValueError("table must be an object of [wins, draws, losses]")
    table = {}
    for name, counts in table_doc.items():
        if not (
            isinstance(counts, list)
            and len(counts) == 3
            and all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts)
        ):
            raise ValueError(f"table[{name!r}] must be [wins, draws, losses], counts >= 0")
        table[name] = Record(*counts)
    rng = document.get("rng")
    try:
        _generator(rng if isinstance(rng, dict) else {})
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"rng is not a PCG64 state ({exc})") from None
    assert isinstance(rng, dict)
    return LeagueState(tuple(pool), table, rng)


def snapshot_name(timesteps: int) -> str:
    return f"snap-{timesteps}"
