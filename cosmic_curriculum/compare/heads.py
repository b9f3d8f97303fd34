"""The final bots of a game study (the arena, PettingZoo) against each other: every pair of
arms, every seed of one against every seed of the other, seat-swapped games of the last
stage (cached in ``compare/measures/heads.json``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cosmic_curriculum.compare.arm_rows import final_checkpoint
from cosmic_curriculum.compare.cache import Cache, checkpoint_key

if TYPE_CHECKING:
    from cosmic_curriculum.compare.arm_runs import ArmRun
    from cosmic_curriculum.compare.arms import ArmPlan
    from cosmic_curriculum.compare.study import Study

# (a's final checkpoint, b's, games): a's counts and score
PlayFinals = Callable[[Path, Path, int], dict[str, Any]]


def final_heads(
    study: Study,
    runs: list[tuple[ArmRun, ArmPlan, int]],
    play: PlayFinals,
    tag: str,
    seed: int,
    episodes: int,
    root: Path,
) -> dict[str, float]:
    """``"a vs b"``: a's mean score over every seed pairing (and ``"b vs a"``, its mirror);
    ``tag`` is what a cached result depends on besides the two checkpoints."""
    cache = Cache(root / "measures" / "heads.json")
    finals = {(plan.name, s): final_checkpoint(run) for run, plan, s in runs}
    head: dict[str, float] = {}
    for a, b in combinations([p.name for p in study.plans], 2):
        scores = []
        for sa in study.seeds:
            for sb in study.seeds:
                x, y = finals[(a, sa)], finals[(b, sb)]
                key = "|".join(checkpoint_key(c, episodes, seed) for c in (x, y))
                got = cache.get(f"{key}:{tag}", partial(play, x, y, episodes))
                scores.append(float(got["score"]))
        head[f"{a} vs {b}"] = sum(scores) / len(scores)
        head[f"{b} vs {a}"] = 1.0 - head[f"{a} vs {b}"]
    return head
