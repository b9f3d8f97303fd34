"""Replay pictures: one recorded game drawn as a PNG trajectory strip or an animated GIF
(top-down x-y and side x-z views of both ships and the orb, arena outline, goal mouths).
The game is played by :func:`cosmic_curriculum.evaluation.evaluate.render_replay`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from cosmic_curriculum.defaults import REPLAY_GIF_FRAMES

if TYPE_CHECKING:
    from cosmic_curriculum.arena.match import Trajectory
    from cosmic_curriculum.arena.settings import GameSettings

_BLUE, _ORANGE, _ORB = "#1f6fd1", "#f07f13", "#7b3fa0"


def draw_replay(
    traj: Trajectory,
    settings: GameSettings,
    out: Path,
    blue_name: str,
    orange_name: str,
    seed: int,
    max_gif_frames: int = REPLAY_GIF_FRAMES,
) -> dict[str, Any]:
    """Draw ``traj`` (A = ``blue_name`` played blue) into ``out`` (.png or .gif); returns
    ``{"out", "outcome", "seconds", "frames"}``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    verdict = {1: "candidate won", -1: "reference won", 0: "draw (time limit)"}[traj.outcome]
    seconds = (len(traj.orb_pos) - 1) * traj.tick
    title = (
        f"{blue_name} (blue) vs {orange_name} (orange): "
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
        (traj.ship_pos[:, 0], _BLUE, f"blue: {blue_name}"),
        (traj.ship_pos[:, 1], _ORANGE, f"orange: {orange_name}"),
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
