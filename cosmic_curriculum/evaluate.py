"""Batched head-to-head evaluation of a candidate bot against a reference bot.

Episodes come in seat-swapped pairs (:func:`arena.match.play_pairs`): one kickoff played
twice with the bots swapping colours, so kickoff luck cancels. Without a gate, or with
the ``margin`` rule (which can only decide once every episode is in), all pairs are
played in one vectorised batch. With ``sprt`` the pairs are played in batches of
``gate.batch_pairs`` and the gate is asked after every pair (``check = "pair"``) or every
batch (``check = "batch"``); evaluation stops as soon as it decides, and any pairs of the
last batch after the deciding one are discarded (listed in ``discarded_pair_outcomes``,
never counted).

Determinism: batch ``k`` is played with the seed derived from ``(seed, k)`` by numpy's
``SeedSequence``, so the same bots (same bytes), game settings, seed, rule and
``batch_pairs`` give an identical record apart from ``id``/``created_at``/``seconds``.
Changing ``batch_pairs`` changes which kickoffs are played (a different, equally valid
sample); a margin or ungated evaluation of N episodes is always one batch of N/2 pairs
with seed ``(seed, 0)``, so those two agree with each other.

Every evaluation appends exactly one record to the history (``history.append_record``)
and returns it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cosmic_curriculum import history, stats
from cosmic_curriculum.bots.external import stops_bots
from cosmic_curriculum.errors import EvaluationError
from cosmic_curriculum.gate import GateDecision, GateSettings, decide

if TYPE_CHECKING:
    from cosmic_curriculum.arena.match import PairResults
    from cosmic_curriculum.arena.settings import GameSettings
    from cosmic_curriculum.bots import Bot, BotSource
    from cosmic_curriculum.bots.external import ExecSpec

DEFAULT_EPISODES = 100


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


def _check_even(episodes: int, option: str) -> int:
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
    """Running counts over the pairs that count toward the decision."""

    def __init__(self) -> None:
        self.pairs: list[list[int]] = []

    def add(self, outcomes: np.ndarray) -> None:
        self.pairs.extend([[int(a), int(b)] for a, b in outcomes])

    @property
    def counts(self) -> tuple[int, int, int]:
        flat = [o for pair in self.pairs for o in pair]
        return flat.count(1), flat.count(-1), flat.count(0)

    @property
    def pair_scores(self) -> list[float]:
        return [stats.pair_score(a, b) for a, b in self.pairs]


def plan(gate: GateSettings | None, episodes: int | None = None) -> tuple[int, int]:
    """``(max_pairs, pairs_per_batch)`` of an evaluation; raises ``EvaluationError`` for an
    odd or too small episode count. Cheap: call it in a preflight to refuse a bad
    ``eval_episodes``/``max_episodes`` before any training is spent."""
    if gate is None or gate.rule == "margin":
        default = DEFAULT_EPISODES if gate is None else gate.episodes
        option = "--episodes" if episodes is not None else "gate episodes"
        total = _check_even(default if episodes is None else episodes, option)
        return total // 2, total // 2
    option = "--episodes" if episodes is not None else "gate max_episodes"
    cap = _check_even(gate.max_episodes if episodes is None else episodes, option)
    return cap // 2, min(gate.batch_pairs, cap // 2)


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
    100 or ``gate.episodes``); with ``sprt``, the cap (default ``gate.max_episodes``).
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
    while len(tally.pairs) < max_pairs:
        n = min(per_batch, max_pairs - len(tally.pairs))
        result = play_pairs(bot_a, bot_b, n, batch_seed(seed, batch), settings)
        batch += 1
        outcomes = np.asarray(result.outcomes)
        if gate is None:
            tally.add(outcomes)
        elif gate.rule == "margin":
            tally.add(outcomes)
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
            on_progress(2 * len(tally.pairs), 2 * max_pairs)
        if decision is not None and decision.verdict != "continue":
            break
    if gate is not None and (decision is None or decision.verdict == "continue"):
        # Cannot happen with the rules as written (both decide at their last episode).
        raise EvaluationError(
            f"the {gate.rule} gate did not decide after {2 * len(tally.pairs)} episodes"
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
        "pairs": tally.pairs,
        "pair_columns": ["candidate_blue", "candidate_orange"],
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
    scores = tally.pair_scores if gate.rule == "sprt" else None
    return decide(gate, wins_a, wins_b, draws, scores, planned_episodes=planned)


# --- replay pictures ---------------------------------------------------------------------

REPLAY_SUFFIXES = (".png", ".gif")
_BLUE, _ORANGE, _ORB = "#1f6fd1", "#f07f13", "#7b3fa0"


def render_replay(
    candidate: Path | str | ExecSpec,
    reference: Path | str | ExecSpec,
    out: Path,
    *,
    seed: int = 0,
    game: GameSettings | None = None,
    max_gif_frames: int = 60,
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

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    verdict = {1: "candidate won", -1: "reference won", 0: "draw (time limit)"}[traj.outcome]
    seconds = (len(traj.orb_pos) - 1) * traj.tick
    title = (
        f"{bots.source_name(candidate)} (blue) vs {bots.source_name(reference)} (orange): "
        f"{verdict} after {seconds:.1f} s (seed {seed})"
    )
    s = settings
    fig, (top, side) = plt.subplots(
        2,
        1,
        figsize=(
            10,
            4.0 + 7.0 * (s.arena_half_width + s.arena_half_height) / s.arena_half_length / 2,
        ),
        gridspec_kw={"height_ratios": [s.arena_half_width, max(s.arena_half_height, 2.0)]},
        constrained_layout=True,
    )
    views = (
        (top, 1, s.arena_half_width, s.goal_half_width, "y (top view)"),
        (side, 2, s.arena_half_height, s.goal_half_height, "z (side view)"),
    )
    for ax, _axis, half, goal_half, label in views:
        _draw_arena(ax, s.arena_half_length, half, goal_half)
        ax.set_ylabel(label)
        ax.set_aspect("equal")
        ax.set_xlim(-s.arena_half_length - 1.5, s.arena_half_length + 1.5)
        ax.set_ylim(-half - 1.0, half + 1.0)
    side.set_xlabel("x (blue attacks →, orange attacks ←)")
    fig.suptitle(title, fontsize=11)

    paths = (
        (traj.ship_pos[:, 0], _BLUE, f"blue: {bots.source_name(candidate)}"),
        (traj.ship_pos[:, 1], _ORANGE, f"orange: {bots.source_name(reference)}"),
        (traj.orb_pos, _ORB, "orb"),
    )
    frames = len(traj.orb_pos)
    if out.suffix.lower() == ".png":
        per_second = max(1, round(1.0 / traj.tick))
        for ax, axis, *_ in views:
            for pos, colour, name in paths:
                ax.plot(pos[:, 0], pos[:, axis], color=colour, lw=1.6, label=name)
                ax.plot(pos[::per_second, 0], pos[::per_second, axis], ".", color=colour, ms=4)
                ax.plot(pos[0, 0], pos[0, axis], "o", color=colour, mfc="white", ms=8)
                ax.plot(pos[-1, 0], pos[-1, axis], "o", color=colour, ms=8)
        handles, labels = _legend(top)
        fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=9)
        top.text(
            0.0,
            1.01,
            "○ start  ● end  · one dot per second  ▌ goal mouths (blue defends x < 0)",
            transform=top.transAxes,
            fontsize=8,
            va="bottom",
        )
        fig.savefig(out, dpi=110)
        plt.close(fig)
        return {"out": str(out), "outcome": traj.outcome, "seconds": seconds, "frames": 1}

    from matplotlib.animation import FuncAnimation, PillowWriter

    stride = max(1, -(-frames // max_gif_frames))
    ticks = list(range(0, frames, stride))
    if ticks[-1] != frames - 1:
        ticks.append(frames - 1)
    artists = []
    for ax, axis, *_ in views:
        for pos, colour, name in paths:
            (trail,) = ax.plot([], [], color=colour, lw=1.4, label=name)
            (head,) = ax.plot([], [], "o", color=colour, ms=9)
            artists.append((trail, head, pos, axis))
    handles, labels = _legend(top)
    fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=9)
    clock = top.text(0.0, 1.01, "", transform=top.transAxes, fontsize=9, va="bottom")

    def draw(i: int) -> list[Any]:
        t = ticks[i]
        for trail, head, pos, axis in artists:
            trail.set_data(pos[: t + 1, 0], pos[: t + 1, axis])
            head.set_data([pos[t, 0]], [pos[t, axis]])
        clock.set_text(f"t = {t * traj.tick:5.1f} s")
        return [a for trail, head, *_ in artists for a in (trail, head)] + [clock]

    fps = max(1, min(25, round(len(ticks) / max(seconds, 1e-9))))
    anim = FuncAnimation(fig, draw, frames=len(ticks), blit=False)
    anim.save(str(out), writer=PillowWriter(fps=fps), dpi=70)
    plt.close(fig)
    return {"out": str(out), "outcome": traj.outcome, "seconds": seconds, "frames": len(ticks)}


@stops_bots  # a program bot stops as soon as its game is over
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


def _legend(ax: Any) -> tuple[list[Any], list[str]]:
    """One legend entry per trajectory (taken from one view; both views share them)."""
    handles, labels = ax.get_legend_handles_labels()
    return handles[:3], labels[:3]


def _draw_arena(ax: Any, half_length: float, half: float, goal_half: float) -> None:
    """Arena outline with both goal mouths (blue defends -x, orange defends +x)."""
    from matplotlib.patches import Rectangle

    ax.add_patch(
        Rectangle((-half_length, -half), 2 * half_length, 2 * half, fill=False, lw=1.5, color="0.3")
    )
    ax.plot(
        [-half_length, -half_length],
        [-goal_half, goal_half],
        color=_BLUE,
        lw=6,
        solid_capstyle="butt",
        label="_blue goal",
    )
    ax.plot(
        [half_length, half_length],
        [-goal_half, goal_half],
        color=_ORANGE,
        lw=6,
        solid_capstyle="butt",
        label="_orange goal",
    )
    ax.axvline(0.0, color="0.85", lw=0.8, zorder=0)
