"""`replay` of an env bot: one episode drawn from the env's ``rgb_array`` frames.

The bot (its JSON or ONNX twin) plays one greedy episode from ``seed`` in its env built
with ``render_mode="rgb_array"``; the picture is a GIF of the episode (at most
``REPLAY_GIF_FRAMES`` frames, sampled evenly) or a PNG strip of ``ENV_REPLAY_STRIP_FRAMES``
frames, titled with the outcome (return, steps, how it ended). An env without an
``rgb_array`` render is one line. matplotlib and gymnasium load on use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from cosmic_curriculum.defaults import ENV_REPLAY_FPS, ENV_REPLAY_STRIP_FRAMES, REPLAY_GIF_FRAMES
from cosmic_curriculum.envs.evaluate import step_cap
from cosmic_curriculum.envs.gymnasium import make_env
from cosmic_curriculum.envs.onnx_twin import load_env_player
from cosmic_curriculum.envs.spaces import batch_of
from cosmic_curriculum.errors import ConfigError, EvaluationError
from cosmic_curriculum.system.fsio import without_surrogates

RENDER_MODE = "rgb_array"


class Frames:
    """At most ``2 * limit`` frames of an episode of unknown length, evenly strided: when
    full, every other one is dropped and the stride doubles."""

    def __init__(self, limit: int) -> None:
        self.limit, self.stride, self.step = limit, 1, 0
        self.kept: list[Any] = []

    def add(self, frame: Any, last: bool = False) -> None:
        if self.step % self.stride == 0 or last:
            self.kept.append(frame)
        self.step += 1
        if len(self.kept) > 2 * self.limit:
            self.kept, self.stride = self.kept[::2], self.stride * 2

    def evenly(self, count: int) -> list[Any]:
        """``count`` of the kept frames, evenly spaced, the first and the last among them."""
        picks = np.unique(np.linspace(0, len(self.kept) - 1, min(count, len(self.kept))))
        return [self.kept[int(i)] for i in picks]


def frame_of(env: Any, what: str) -> Any:
    """``env``'s rendered RGB(A) frame; one line when it renders none."""
    try:
        frame = env.render()
    except Exception as exc:
        raise EvaluationError(f"{what}: render() raised {type(exc).__name__}: {exc}") from None
    array = np.asarray(frame) if frame is not None else None
    if array is None or array.ndim != 3 or array.shape[2] not in (3, 4):
        raise EvaluationError(
            f"{what} has no rgb_array render (render() gave {type(frame).__name__}); replay "
            "draws envs that render RGB frames"
        )
    return array


def render_env_replay(
    bot_path: Path, out: Path, *, seed: int = 0, bot: Any = None
) -> dict[str, Any]:
    """Play and draw one episode (of ``bot``, when the caller loaded it from
    ``bot_path``); returns ``out``, ``return``, ``steps``, ``ended``."""
    suffix = Path(out).suffix.lower()
    if suffix not in (".gif", ".png"):
        raise EvaluationError(f"--out {out}: name the picture .gif or .png")
    path = Path(bot_path)
    if bot is None:
        bot = load_env_player(path)
    what = f"env {bot.env.id!r}"
    if bot.env.kwargs.get("render_mode") not in (None, RENDER_MODE):
        raise EvaluationError(f"{path}: its env sets render_mode; replay needs {RENDER_MODE!r}")
    spec = bot.env.model_copy(update={"kwargs": {**bot.env.kwargs, "render_mode": RENDER_MODE}})
    try:
        env = make_env(spec)
    except ConfigError as exc:
        raise EvaluationError(f"{what} has no rgb_array render ({exc})") from None
    try:
        if RENDER_MODE not in env.metadata.get("render_modes", []):
            raise EvaluationError(
                f"{what} has no rgb_array render (its render_modes are "
                f"{env.metadata.get('render_modes', [])}); replay draws envs that render frames"
            )
        obs, _ = env.reset(seed=seed)
        frames = Frames(REPLAY_GIF_FRAMES)
        frames.add(frame_of(env, what))
        total, steps, cap, ended, success = 0.0, 0, step_cap(env), "cut at the step cap", None
        discrete = type(env.action_space).__name__ == "Discrete"
        while steps < cap:
            action = bot.act(batch_of([obs]))[0]
            obs, reward, terminated, truncated, info = env.step(
                int(action) if discrete else np.asarray(action)
            )
            total, steps = total + float(reward), steps + 1
            if isinstance(info, dict) and "is_success" in info:
                success = bool(info["is_success"])
            done = bool(terminated or truncated)
            frames.add(frame_of(env, what), last=done)
            if done:
                ended = "terminated" if terminated else "truncated"
                break
    finally:
        env.close()
    name = without_surrogates(path.name)  # a file name need not be UTF-8
    title = f"{bot.env.id}: {name}, seed {seed}: return {total:g} in {steps} steps, {ended}"
    if success is not None:
        title += ", success" if success else ", no success"
    draw_frames(frames, Path(out), title, suffix)
    return {"out": str(out), "return": total, "steps": steps, "ended": ended, "title": title}


def draw_frames(frames: Frames, out: Path, title: str, suffix: str) -> None:
    """``frames`` as a GIF, or a PNG strip of evenly spaced ones, titled."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".png":
        shown = frames.evenly(ENV_REPLAY_STRIP_FRAMES)
        fig, axes = plt.subplots(1, len(shown), figsize=(2.2 * len(shown), 2.6), squeeze=False)
        for ax, frame in zip(axes[0], shown, strict=True):
            ax.imshow(frame)
            ax.set_axis_off()
        fig.suptitle(title, fontsize=9)
        fig.savefig(out, dpi=90)
        plt.close(fig)
        return
    from matplotlib.animation import FuncAnimation, PillowWriter

    shown = frames.evenly(REPLAY_GIF_FRAMES)
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.set_axis_off()
    ax.set_title(title, fontsize=8)
    image = ax.imshow(shown[0])

    def draw(i: int) -> list[Any]:
        image.set_data(shown[i])
        return [image]

    anim = FuncAnimation(fig, draw, frames=len(shown), blit=False)
    anim.save(str(out), writer=PillowWriter(fps=ENV_REPLAY_FPS), dpi=70)
    plt.close(fig)
