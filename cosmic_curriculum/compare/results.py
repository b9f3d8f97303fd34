"""A study's document (what --json writes), pure: each arm × seed's row with its final
bot's measures and intervals, the final bots against each other, and the verdict."""

from __future__ import annotations

from itertools import product
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cosmic_curriculum.compare import verdict as v
from cosmic_curriculum.compare.arm_rows import VALUE_KEYS
from cosmic_curriculum.defaults import COMPARE_EVAL_SEED
from cosmic_curriculum.evaluation.stats import wilson_interval
from cosmic_curriculum.scoring import score

if TYPE_CHECKING:
    from cosmic_curriculum.compare.study import CompareOptions, Study


def paired_score(mine: list[float], theirs: list[float]) -> float:
    """Episodes on the same seeds, the higher return winning: (wins + draws/2) / episodes."""
    wins = sum(a > b for a, b in zip(mine, theirs, strict=True))
    draws = sum(a == b for a, b in zip(mine, theirs, strict=True))
    return score(wins, draws, len(mine), if_none=0.5)


def env_final(f: dict[str, Any]) -> dict[str, Any]:
    """A Gymnasium final bot: its success rate (Wilson interval), mean return, and its
    score against the random player on the same episode seeds."""
    low, high = wilson_interval(f["successes"], f["episodes"])
    return {
        "episodes": f["episodes"],
        "successes": f["successes"],
        "success_rate": f["success_rate"],
        "success_interval": [low, high],
        "mean_return": f["mean_return"],
        "vs_reference": paired_score(f["returns"], f["reference_returns"]),
    }


def game_final(f: dict[str, Any]) -> dict[str, Any]:
    """A game's final bot (the arena, PettingZoo): its games against the reference, its
    score and interval."""
    keys = ("episodes", "wins", "losses", "draws", "score", "score_interval")
    return {**{k: f[k] for k in keys}, "vs_reference": f["score"]}


def document(
    study: Study,
    rows: list[dict[str, Any]],
    opts: CompareOptions,
    head: dict[str, float] | None = None,
) -> dict[str, Any]:
    """``head``: the final bots' games against each other (the arena, PettingZoo); None:
    from the final bots' returns on the same episode seeds (Gymnasium)."""
    arms = [p.name for p in study.plans]
    shape = env_final if study.kind == "gymnasium" else game_final
    out = [{**row, "final": shape(row["final"])} for row in rows]
    by_arm = {a: [r for r in out if r["arm"] == a] for a in arms}
    if head is None:
        head = {}
        raw = {a: [r["final"]["returns"] for r in rows if r["arm"] == a] for a in arms}
        for a, b in product(arms, arms):
            if a != b:
                scores = [paired_score(x, y) for x in raw[a] for y in raw[b]]
                head[f"{a} vs {b}"] = sum(scores) / len(scores)
    if study.kind == "gymnasium":
        assert study.probe is not None
        reference, env = "random", str(study.probe.spec.id)
    else:
        assert study.reference is not None
        reference = reference_label(study.reference, study.ws)
        env = (
            "arena"
            if study.kind == "arena"
            else str(study.config.stage_env(len(study.config.stages) - 1).id)
        )
    return {
        "arms": out,
        "budget": study.plans[0].total,
        "seeds": study.seeds,
        "kind": study.kind,
        "measure": study.measure,
        "target": study.target,
        "last_stage": study.config.stages[-1].name,
        "env": env,
        "reference": reference,
        "episodes": {"checkpoint": opts.checkpoint_episodes, "final": opts.final_episodes},
        "eval_seed": COMPARE_EVAL_SEED,
        "head_to_head": head,
        "verdict": verdict_lines(arms, by_arm, study),
    }


def reference_label(reference: Path | str, ws: Path) -> str:
    """A reference as the study names it: a built-in's name, a bot file by its path in
    the workspace (or as given, outside it)."""
    if isinstance(reference, str):
        return reference
    return str(reference.relative_to(ws)) if reference.is_relative_to(ws) else str(reference)


def verdict_lines(
    arms: list[str], by_arm: dict[str, list[dict[str, Any]]], study: Study
) -> list[str]:
    key = VALUE_KEYS[study.measure]
    budget = study.plans[0].total
    last = study.config.stages[-1].name
    lines = []
    for a in arms:
        over = [r for r in by_arm[a] if r["timesteps"] > budget]
        if over:
            spent = ", ".join(f"seed {r['seed']}: {r['timesteps']:,}" for r in over)
            lines.append(
                f"{a} spent more than the budget of {budget:,} timesteps on some seeds "
                f"({spent}: its gates' retries); its figures include them"
            )
    for a in arms:
        stopped = [r for r in by_arm[a] if r.get("status") == "blocked"]
        if stopped:
            spent = ", ".join(
                f"seed {r['seed']} after {r['timesteps']:,} timesteps" for r in stopped
            )
            lines.append(
                f"{a} was blocked on {spent} (a gate failed its last retry); its final bot "
                "is that training's"
            )
    if study.target is not None:
        for a in arms:
            lines.append(
                v.reach_sentence(a, [r["first_target_at"] for r in by_arm[a]], study.target)
            )
    base = arms[0]
    for other in arms[1:]:
        mine = [float(r["final"][key]) for r in by_arm[base]]
        theirs = [float(r["final"][key]) for r in by_arm[other]]
        what = f"final {key.replace('_', ' ')} on {last}"
        lines.append(v.compare_values(base, mine, other, theirs, what))
        if study.target is not None:
            ra = v.reach_values([r["first_target_at"] for r in by_arm[base]], budget)
            rb = v.reach_values([r["first_target_at"] for r in by_arm[other]], budget)
            what = f"timesteps to {study.target:g} (fewer is higher)"
            lines.append(v.compare_values(base, ra, other, rb, what))
    lines.append(
        "each seed is one training: the episodes bound how well each bot is measured "
        "(the intervals), the seeds how well each arm is"
    )
    return lines
