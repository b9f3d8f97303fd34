"""Batched head-to-head evaluation of a candidate bot against a reference bot.

Episodes come in seat-swapped pairs (:func:`arena.match.play_pairs`): one kickoff played
twice with the bots swapping colours, so kickoff luck cancels. Without a gate, or with
the ``margin`` rule (which can only decide once every episode is in), all pairs are
played in one vectorised batch. With ``sprt`` or ``threshold`` the pairs are played in batches of
``gate.batch_pairs`` and the gate is asked after every pair (``check = "pair"``) or every
batch (``check = "batch"``); evaluation stops as soon as it decides, and any pairs of the
last batch after the deciding one are discarded (listed in ``discarded_pair_outcomes``,
never counted).

Determinism: batch ``k`` is played with the seed derived from ``(seed, k)`` by numpy's
``SeedSequence``, so the same bots (same bytes), game settings, seed, rule and
``batch_pairs`` give an identical record apart from ``id``/``created_at``/``seconds``.
Changing ``batch_pairs`` changes which kickoffs are played (a different, equally valid
sample); a margin or ungated evaluation of N episodes is one batch of N/2 pairs with seed
``(seed, 0)``, so those two agree with each other. Memory stays bounded whatever N: no
batch holds more than :data:`MAX_BATCH_PAIRS` pairs (larger N: consecutive batches of
that size, seeds ``(seed, 0)``, ``(seed, 1)``, ...), outcomes are tallied in a compact
array, and records list single pairs only up to :data:`MAX_LISTED_PAIRS`.

Every evaluation appends exactly one record to the history (``history.append_record``)
and returns it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cosmic_curriculum.bots.external import stops_bots
from cosmic_curriculum.defaults import EVAL_EPISODES, REPLAY_GIF_FRAMES
from cosmic_curriculum.errors import EvaluationError
from cosmic_curriculum.evaluation import stats
from cosmic_curriculum.evaluation.gate import GateDecision, GateSettings, decide
from cosmic_curriculum.workspace import history

if TYPE_CHECKING:
    from cosmic_curriculum.arena.match import PairResults
    from cosmic_curriculum.arena.settings import GameSettings
    from cosmic_curriculum.bots import Bot, BotSource
    from cosmic_curriculum.bots.external import ExecSpec

# Memory ceiling: a batch of games costs about 4 KB per pair, so no batch plays more than
# this many pairs (about 8 MB); larger evaluations are played in batches of this size.
MAX_BATCH_PAIRS = 2048
# Records list every pair up to this many; a larger evaluation records the pair-score
# histogram instead (`pair_counts`), which keeps every statistic without O(n) JSON.
MAX_LISTED_PAIRS = 50_000


def batch_seed(seed: int, batch: int) -> int:
    """The seed of batch ``batch`` of an evaluation seeded with ``seed``."""
    return int(np.random.SeedSequence([seed, batch]).generate_state(1, dtype=np.uint64)[0])


def game_for(bot: Bot) -> GameSettings:
    """The game a bot is evaluated under: its recorded settings, defaults for scripted bots.

    Only the outcome matters in evaluation, so reward terms recorded in the file are
    irrelevant; the geometry, physics and modes (planar, level) are what count.
    """
    from cosmic_curriculum.arena.settings import GameSettings

    recorded = getattr(bot, "game", None)
    if bot.kind == "scripted" or recorded is None:
        return GameSettings()
    if not isinstance(recorded, GameSettings):
        raise EvaluationError(f"bot of kind {bot.kind!r} carries no usable game settings")
    return recorded


def check_even(episodes: int, option: str) -> int:
    if episodes < 2 or episodes % 2:
        raise EvaluationError(
            f"{option}={episodes}: episodes are played in seat-swapped pairs, so the count "
            f"must be an even number >= 2; use {max(2, episodes + episodes % 2)}"
        )
    return episodes


def _check_seed(seed: int) -> int:
    if seed < 0:
        raise EvaluationError(f"seed={seed}: the seed must be a non-negative integer")
    return seed


class _Tally:
    """Running counts over the pairs that count toward the decision (2 bytes a pair)."""

    def __init__(self) -> None:
        self._outcomes = np.zeros((0, 2), dtype=np.int8)
        self.n = 0
        self.wins_a = self.wins_b = self.draws = 0

    def add(self, outcomes: np.ndarray) -> None:
        new = np.asarray(outcomes, dtype=np.int8).reshape(-1, 2)
        if self.n + len(new) > len(self._outcomes):  # grow geometrically, not per batch
            grown = np.zeros((max(2 * len(self._outcomes), self.n + len(new)), 2), np.int8)
            grown[: self.n] = self._outcomes[: self.n]
            self._outcomes = grown
        self._outcomes[self.n : self.n + len(new)] = new
        self.n += len(new)
        self.wins_a += int((new == 1).sum())
        self.wins_b += int((new == -1).sum())
        self.draws += int((new == 0).sum())

    @property
    def outcomes(self) -> np.ndarray:
        return self._outcomes[: self.n]

    @property
    def pairs(self) -> list[list[int]]:
        listed: list[list[int]] = self.outcomes.astype(int).tolist()
        return listed

    @property
    def counts(self) -> tuple[int, int, int]:
        return self.wins_a, self.wins_b, self.draws

    @property
    def pair_scores(self) -> list[float]:
        """The candidate's mean score in each pair (= ``stats.pair_score``)."""
        scores: list[float] = ((self.outcomes.sum(axis=1, dtype=np.int64) + 2) / 4.0).tolist()
        return scores

    def pair_counts(self) -> list[int]:
        """How many pairs the candidate scored 0, 0.25, 0.5, 0.75 and 1 in."""
        totals = self.outcomes.sum(axis=1, dtype=np.int64) + 2
        return [int(c) for c in np.bincount(totals, minlength=5)]


def plan(gate: GateSettings | None, episodes: int | None = None) -> tuple[int, int]:
    """``(max_pairs, pairs_per_batch)`` of an evaluation; raises ``EvaluationError`` for an
    odd or too small episode count. Cheap: call it in a preflight to refuse a bad
    ``eval_episodes``/``max_episodes`` before any training is spent."""
    if gate is None or gate.rules == ("margin",):
        default = EVAL_EPISODES if gate is None else gate.episodes
        option = "--episodes" if episodes is not None else "gate episodes"
        total = check_even(default if episodes is None else episodes, option)
        return total // 2, min(total // 2, MAX_BATCH_PAIRS)
    if "threshold" in gate.rules and gate.measure == "return":
        raise EvaluationError(
            'gate measure = "return": the built-in evaluator plays head-to-head games and '
            'records no returns; use measure = "success" (a won episode succeeds) or an '
            "evaluation_command whose record holds 'returns'"
        )
    # With margin among several rules the evaluation plays margin's episodes at most.
    where = "gate episodes" if "margin" in gate.rules else "gate max_episodes"
    option = "--episodes" if episodes is not None else where
    cap = check_even(gate.planned_episodes if episodes is None else episodes, option)
    return cap // 2, min(gate.batch_pairs, cap // 2, MAX_BATCH_PAIRS)


@stops_bots
def run_evaluation(
    candidate: Path | str | ExecSpec,
    reference: Path | str | ExecSpec,
    *,
    history_path: Path,
    episodes: int | None = None,
    gate: GateSettings | None = None,
    seed: int = 0,
    game: GameSettings | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Play ``candidate`` (A) against ``reference`` (B) and append one history record.

    ``episodes``: without a gate or with ``margin``, exactly this many (even; default
    ``EVAL_EPISODES`` or ``gate.episodes``); with ``sprt`` or ``threshold`` (on success:
    an episode succeeds when the candidate wins it), the cap (default
    ``gate.max_episodes``).
    ``on_progress(episodes_played, episodes_planned)`` is called after every batch.
    ``extra`` is merged into the record (e.g. the curriculum's experiment name).
    Returns the stored record (with its ``id``). A bot is a file's path or an
    ``exec:<command>`` program (``bots.as_source``); programs are stopped on return.
    """
    from cosmic_curriculum import bots
    from cosmic_curriculum.arena.match import play_pairs

    candidate, reference = bots.as_source(candidate), bots.as_source(reference)
    _check_seed(seed)
    max_pairs, per_batch = plan(gate, episodes)
    bot_a = bots.open_bot(candidate)
    bot_b = bots.open_bot(reference)
    settings = game if game is not None else game_for(bot_a)
    sha_a, sha_b = bots.source_sha256(candidate), bots.source_sha256(reference)

    started = time.perf_counter()
    tally = _Tally()
    decision: GateDecision | None = None
    discarded: list[list[int]] = []
    batch = 0
    while tally.n < max_pairs:
        n = min(per_batch, max_pairs - tally.n)
        result = play_pairs(bot_a, bot_b, n, batch_seed(seed, batch), settings)
        batch += 1
        outcomes = np.asarray(result.outcomes)
        if gate is None:
            tally.add(outcomes)
        elif gate.rules == ("margin",):
            tally.add(outcomes)
            if tally.n == max_pairs:  # margin decides once, on every episode
                decision = _ask(gate, tally, 2 * max_pairs)
        else:
            step = 1 if gate.check == "pair" else n
            for start in range(0, n, step):
                tally.add(outcomes[start : start + step])
                decision = _ask(gate, tally, 2 * max_pairs)
                if decision.verdict != "continue":
                    discarded = [[int(a), int(b)] for a, b in outcomes[start + step :]]
                    break
        if on_progress is not None:
            on_progress(2 * tally.n, 2 * max_pairs)
        if decision is not None and decision.verdict != "continue":
            break
    if gate is not None and (decision is None or decision.verdict == "continue"):
        # Cannot happen with the rules as written (both decide at their last episode).
        raise EvaluationError(
            f"the {gate.rule_label} gate did not decide after {2 * tally.n} episodes"
        )

    wins_a, wins_b, draws = tally.counts
    record: dict[str, Any] = {
        "wins_a": wins_a,
        "wins_b": wins_b,
        "draws": draws,
        "episodes": wins_a + wins_b + draws,
        "candidate": str(candidate),
        "reference": str(reference),
        "candidate_sha256": sha_a,
        "reference_sha256": sha_b,
        "candidate_decision_ticks": bot_a.decision_ticks,
        "reference_decision_ticks": bot_b.decision_ticks,
        "seed": seed,
        "batch_pairs": per_batch,
        "batches": batch,
    }
    if tally.n <= MAX_LISTED_PAIRS:
        record["pairs"] = tally.pairs
        record["pair_columns"] = ["candidate_blue", "candidate_orange"]
    else:  # the histogram carries every statistic; millions of pairs would bloat the file
        record["pair_counts"] = tally.pair_counts()
        record["pair_count_scores"] = [0.0, 0.25, 0.5, 0.75, 1.0]
    record |= {
        # Played after the sequential test had decided: shown, never counted.
        "discarded_pairs": len(discarded),
        "discarded_pair_outcomes": discarded,
    }
    described = stats.describe(wins_a, wins_b, draws)
    for key in (
        "score",
        "gap",
        "gap_ci95",
        "gap_ci_method",
        "win_rate_a_ci95",
        "elo",
        "elo_ci95",
        "elo_err95",
    ):
        record[key] = described[key]
    record["summary"] = stats.counts_summary(wins_a, wins_b, draws)
    if gate is not None and decision is not None:
        record["gate"] = {**decision.to_dict(), "settings": gate.model_dump()}
        record["summary"] = decision.summary
    record["game"] = settings.model_dump()
    record["seconds"] = round(time.perf_counter() - started, 3)
    if extra:
        record.update(extra)
    return history.append_record(Path(history_path), record)


def _ask(gate: GateSettings, tally: _Tally, planned: int) -> GateDecision:
    wins_a, wins_b, draws = tally.counts
    scores = tally.pair_scores if "sprt" in gate.rules else None
    return decide(gate, wins_a, wins_b, draws, scores, planned_episodes=planned)


# --- replay pictures ---------------------------------------------------------------------

REPLAY_SUFFIXES = (".png", ".gif")


@stops_bots  # a program bot stops as soon as its game is over
def render_replay(
    candidate: Path | str | ExecSpec,
    reference: Path | str | ExecSpec,
    out: Path,
    *,
    seed: int = 0,
    game: GameSettings | None = None,
    max_gif_frames: int = REPLAY_GIF_FRAMES,
) -> dict[str, Any]:
    """Play one game (candidate as blue, the first game of pair 0 of batch seed
    ``(seed, 0)``) and draw it: top-down (x-y) and side (x-z) views of both ships and the
    orb with the arena outline and goal mouths, as a PNG or an animated GIF.

    Returns ``{"out", "outcome", "seconds", "frames"}``; ``outcome`` is the candidate's
    view (+1 won, -1 lost, 0 draw).
    """
    from cosmic_curriculum import bots

    candidate, reference = bots.as_source(candidate), bots.as_source(reference)
    out = Path(out)
    if out.suffix.lower() not in REPLAY_SUFFIXES:
        raise EvaluationError(
            f"--out {out}: unknown picture type {out.suffix or '(none)'!r}; use a .png "
            "(trajectory strip) or a .gif (animation)"
        )
    _check_seed(seed)
    settings, result = _recorded_game(candidate, reference, seed, game)
    traj = result.trajectory
    if traj is None:  # play_pairs always records when asked; keep mypy and readers honest
        raise EvaluationError("the match did not return a trajectory to draw")

    from cosmic_curriculum.evaluation.replay import draw_replay
    from cosmic_curriculum.system import fsio

    return draw_replay(
        traj,
        settings,
        out,
        fsio.without_surrogates(bots.source_name(candidate)),  # a non-UTF-8 file name
        fsio.without_surrogates(bots.source_name(reference)),
        seed,
        max_gif_frames,
    )


def _recorded_game(
    candidate: BotSource, reference: BotSource, seed: int, game: GameSettings | None
) -> tuple[GameSettings, PairResults]:
    """Game 0 of pair 0 of batch seed ``(seed, 0)``, recorded, and the game it was played in."""
    from cosmic_curriculum import bots
    from cosmic_curriculum.arena.match import play_pairs

    bot_a, bot_b = bots.open_bot(candidate), bots.open_bot(reference)
    settings = game if game is not None else game_for(bot_a)
    seed_0 = batch_seed(seed, 0)
    return settings, play_pairs(bot_a, bot_b, 1, seed_0, settings, record=True, record_game=0)
