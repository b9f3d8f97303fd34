"""The final bots of an arena study against each other: every pair of arms, every seed of
one against every seed of the other, seat-swapped games of the last stage (cached in
``compare/measures/heads.json``)."""

from __future__ import annotations

from functools import partial
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING

from cosmic_curriculum.compare import arena_measure as am
from cosmic_curriculum.compare.arm_rows import final_checkpoint
from cosmic_curriculum.compare.cache import Cache, checkpoint_key

if TYPE_CHECKING:
    from cosmic_curriculum.compare.arm_runs import ArmRun
    from cosmic_curriculum.compare.arms import ArmPlan
    from cosmic_curriculum.compare.study import Study


def arena_heads(
    study: Study,
    runs: list[tuple[ArmRun, ArmPlan, int]],
    probe: am.ArenaProbe,
    episodes: int,
    root: Path,
) -> dict[str, float]:
    """``"a vs b"``: a's mean score over every seed pairing (and ``"b vs a"``, its mirror)."""
    cache = Cache(root / "measures" / "heads.json")
    finals = {(plan.name, seed): final_checkpoint(run) for run, plan, seed in runs}
    head: dict[str, float] = {}
    for a, b in combinations([p.name for p in study.plans], 2):
        scores = []
        for sa in study.seeds:
            for sb in study.seeds:
                x, y = finals[(a, sa)], finals[(b, sb)]
                pair = [checkpoint_key(c, episodes, probe.seed) for c in (x, y)]
                key = "|".join(pair)
                got = cache.get(
                    f"{key}:{probe.tag()}", partial(am.play_finals, x, y, probe, episodes)
                )
                scores.append(float(got["score"]))
        head[f"{a} vs {b}"] = sum(scores) / len(scores)
        head[f"{b} vs {a}"] = 1.0 - head[f"{a} vs {b}"]
    return head
