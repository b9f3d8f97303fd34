"""One arm × seed's row of the study: its checkpoints along the way and its final bot,
measured on the last stage by the env kind's ``Measurer`` (Gymnasium: episodes of the
last stage's env; the arena: games against the fixed reference), every result cached
in ``compare/measures/<run>.json`` so a resumed compare measures nothing twice."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from cosmic_curriculum.compare.arm_runs import ArmRun, arm_status
from cosmic_curriculum.compare.arms import ArmPlan, spent_offsets
from cosmic_curriculum.compare.cache import Cache, checkpoint_key
from cosmic_curriculum.compare.verdict import first_crossing
from cosmic_curriculum.errors import CompareError
from cosmic_curriculum.workspace import layout as L

VALUE_KEYS = {"success": "success_rate", "return": "mean_return", "score": "score"}


@dataclass(frozen=True)
class Measurer:
    """How a kind of env measures a checkpoint: ``play(checkpoint, episodes)``, ``tag``
    (what a cached result depends on besides the checkpoint and episodes), ``measure``
    (the value the curve, the target and the verdict read) and ``extra(final checkpoint,
    cache)``, what the final row adds (the random reference's returns on the same seeds)."""

    play: Callable[[Path, int], dict[str, Any]]
    tag: str
    measure: str
    extra: Callable[[Path, Cache], dict[str, Any]] | None = None

    def value(self, result: dict[str, Any]) -> float:
        return float(result[VALUE_KEYS[self.measure]])


def arm_experiments(run: ArmRun) -> list[tuple[int, str]]:
    """Each attempt the arm's run decided, in order: (its stage index in the arm, its
    experiment); a retry is an attempt of its own (it spent its timesteps too)."""
    state = arm_status(run.ws) or {}
    entries = [e for e in state.get("log", []) if isinstance(e, dict) and "experiment" in e]
    return [(int(e["stage_index"]), str(e["experiment"])) for e in entries]


def final_checkpoint(run: ArmRun) -> Path:
    done = arm_experiments(run)
    if not done:
        raise CompareError(f"{run.ws}: the arm's run decided nothing; run compare again")
    return L.Layout(run.ws).final_checkpoint(done[-1][1])


def measure_arm(
    run: ArmRun,
    plan: ArmPlan,
    seed: int,
    m: Measurer,
    *,
    episodes: tuple[int, int],
    eval_seed: int,
    target: float | None,
    root: Path,
    say: Callable[[str], None],
    stop: threading.Event,
) -> dict[str, Any]:
    """The arm's row; ``episodes`` = (per checkpoint along the way, per final bot)."""
    done = arm_experiments(run)
    if not done:
        raise CompareError(f"{run.ws}: the arm's run decided nothing; run compare again")
    steps = [plan.timesteps[index] for index, _ in done]
    cache = Cache(root / "measures" / f"{run.name}.json")
    layout = L.Layout(run.ws)
    points: list[list[float]] = []
    along, last = episodes
    for (_, exp), offset, total in zip(done, spent_offsets(steps), steps, strict=True):
        ckpts = [(n, p) for n, p in L.step_checkpoints(layout.checkpoint_dir(exp)) if n < total]
        ckpts.append((total, layout.final_checkpoint(exp)))
        for n, path in ckpts:
            if stop.is_set():
                raise CompareError("compare: stopped while measuring; run compare again")
            got = cache.get(_key(path, along, eval_seed, m), partial(m.play, path, along))
            points.append([offset + n, m.value(got)])
    final_ckpt = layout.final_checkpoint(done[-1][1])
    final = dict(cache.get(_key(final_ckpt, last, eval_seed, m), partial(m.play, final_ckpt, last)))
    if m.extra is not None:
        final |= m.extra(final_ckpt, cache)
    first = None if target is None else first_crossing([(int(t), v) for t, v in points], target)
    say(f"{run.name}: measured {len(points)} checkpoints; final {m.value(final):.3f}")
    state = arm_status(run.ws) or {}
    return {
        "arm": plan.name,
        "seed": seed,
        "timesteps": sum(steps),
        "status": state.get("status"),
        "stages": [exp for _, exp in done],
        "final": final,
        "first_target_at": first,
        "points": points,
    }


def _key(path: Path, episodes: int, seed: int, m: Measurer) -> str:
    return f"{checkpoint_key(path, episodes, seed)}:{m.tag}"
