"""A measured comparison as one document (what --json writes), its table, the verdict
sentences, the plot (PNG bytes) and compare/REPORT.md."""

from __future__ import annotations

import io
from itertools import product
from typing import TYPE_CHECKING, Any

from cosmic_curriculum.compare import verdict as v
from cosmic_curriculum.evaluation.stats import wilson_interval
from cosmic_curriculum.scoring import score

if TYPE_CHECKING:
    from cosmic_curriculum.compare.study import CompareOptions, Study


def paired_score(mine: list[float], theirs: list[float]) -> float:
    """Episodes on the same seeds, the higher return winning: (wins + draws/2) / episodes."""
    wins = sum(a > b for a, b in zip(mine, theirs, strict=True))
    draws = sum(a == b for a, b in zip(mine, theirs, strict=True))
    return score(wins, draws, len(mine), if_none=0.5)


def document(study: Study, rows: list[dict[str, Any]], opts: CompareOptions) -> dict[str, Any]:
    arms = [p.name for p in study.plans]
    out_rows = []
    for row in rows:
        f = row["final"]
        low, high = wilson_interval(f["successes"], f["episodes"])
        final = {
            "episodes": f["episodes"],
            "successes": f["successes"],
            "success_rate": f["success_rate"],
            "success_interval": [low, high],
            "mean_return": f["mean_return"],
            "vs_reference": paired_score(f["returns"], f["reference_returns"]),
        }
        out_rows.append({**row, "final": final})
    by_arm = {a: [r for r in rows if r["arm"] == a] for a in arms}
    head = {}
    for a, b in product(arms, arms):
        if a != b:
            scores = [
                paired_score(x["final"]["returns"], y["final"]["returns"])
                for x in by_arm[a]
                for y in by_arm[b]
            ]
            head[f"{a} vs {b}"] = sum(scores) / len(scores)
    measure_key = "success_rate" if study.measure == "success" else "mean_return"
    return {
        "arms": out_rows,
        "budget": study.plans[0].total,
        "seeds": study.seeds,
        "measure": study.measure,
        "target": study.target,
        "last_stage": study.config.stages[-1].name,
        "env": study.probe.spec.id,
        "episodes": {"checkpoint": opts.checkpoint_episodes, "final": opts.final_episodes},
        "eval_seed": study.probe.seed,
        "head_to_head": head,
        "verdict": verdict_lines(arms, by_arm, measure_key, study),
    }


def verdict_lines(
    arms: list[str], by_arm: dict[str, list[dict[str, Any]]], key: str, study: Study
) -> list[str]:
    lines = []
    if study.target is not None:
        for a in arms:
            lines.append(
                v.reach_sentence(a, [r["first_target_at"] for r in by_arm[a]], study.target)
            )
    base = arms[0]
    for other in arms[1:]:
        mine = [float(r["final"][key]) for r in by_arm[base]]
        theirs = [float(r["final"][key]) for r in by_arm[other]]
        lines.append(
            v.compare_values(
                base,
                mine,
                other,
                theirs,
                f"final {key.replace('_', ' ')} on {study.config.stages[-1].name}",
            )
        )
        if study.target is not None:
            budget = study.plans[0].total
            ra = v.reach_values([r["first_target_at"] for r in by_arm[base]], budget)
            rb = v.reach_values([r["first_target_at"] for r in by_arm[other]], budget)
            lines.append(
                v.compare_values(
                    base, ra, other, rb, f"timesteps to {study.target:g} (fewer is higher)"
                )
            )
    lines.append(
        "each seed is one training: the episodes bound how well each bot is measured "
        "(the intervals), the seeds how well each arm is"
    )
    return lines


def table_lines(doc: dict[str, Any]) -> list[str]:
    """The plain-text table `compare` prints, one row per arm x seed, then the verdict."""
    first_col = f"first {doc['target']}"
    head = (
        f"{'arm':<24} {'seed':>4} {'timesteps':>11} {'success (95%)':>22} "
        f"{'mean return':>11} {'vs ref':>6} {first_col:>12}"
    )
    lines = [head]
    for r in doc["arms"]:
        f = r["final"]
        lo, hi = f["success_interval"]
        first = f"{r['first_target_at']:,}" if r["first_target_at"] is not None else "-"
        lines.append(
            f"{r['arm']:<24} {r['seed']:>4} {r['timesteps']:>11,} "
            f"{f['success_rate']:>8.3f} [{lo:.3f}, {hi:.3f}] {f['mean_return']:>11.3f} "
            f"{f['vs_reference']:>6.3f} {first:>12}"
        )
    for pair, s in doc["head_to_head"].items():
        lines.append(f"head to head {pair}: {s:.3f}")
    lines += [f"verdict: {line}" for line in doc["verdict"]]
    return lines


def plot_png(doc: dict[str, Any]) -> bytes:
    """Each arm x seed's checkpoints on the last stage against timesteps spent."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    arms = list(dict.fromkeys(r["arm"] for r in doc["arms"]))
    colours = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown"]
    for r in doc["arms"]:
        colour = colours[arms.index(r["arm"]) % len(colours)]
        pts = sorted(r["points"])
        first = r is next(x for x in doc["arms"] if x["arm"] == r["arm"])
        ax.plot(
            [p[0] for p in pts],
            [p[1] for p in pts],
            marker=".",
            color=colour,
            alpha=0.8,
            label=r["arm"] if first else None,
        )
    if doc["target"] is not None:
        ax.axhline(
            doc["target"],
            color="grey",
            linestyle="--",
            linewidth=1,
            label=f"target {doc['target']:g}",
        )
    ax.set_xlabel("timesteps spent")
    ax.set_ylabel(
        ("success rate" if doc["measure"] == "success" else "mean return")
        + f" on {doc['last_stage']}"
    )
    ax.set_title(
        f"{doc['env']}: every arm's checkpoints ({len(doc['seeds'])} seeds each)", fontsize=10
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    return buffer.getvalue()


def report_md(doc: dict[str, Any], plot_name: str | None) -> str:
    lines = [
        "# Does the curriculum pay? (`cosmic-curriculum compare`)",
        "",
        f"Arms at {doc['budget']:,} timesteps each, trainer seeds "
        f"{', '.join(map(str, doc['seeds']))}, measured on the last stage `{doc['last_stage']}` "
        f"({doc['env']}): {doc['episodes']['checkpoint']} episodes per checkpoint, "
        f"{doc['episodes']['final']} per final bot "
        f"(episode seeds from {doc['eval_seed']}, the same for every arm).",
        "",
        "| arm | seed | timesteps | success (95% interval) | mean return | vs reference | first "
        + f"{doc['target']} |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in doc["arms"]:
        f = r["final"]
        lo, hi = f["success_interval"]
        first = f"{r['first_target_at']:,}" if r["first_target_at"] is not None else "—"
        lines.append(
            f"| {r['arm']} | {r['seed']} | {r['timesteps']:,} | {f['success_rate']:.3f} "
            f"({lo:.3f}–{hi:.3f}) | {f['mean_return']:.3f} | {f['vs_reference']:.3f} | {first} |"
        )
    lines += ["", *(f"- head to head {k}: {s:.3f}" for k, s in doc["head_to_head"].items()), ""]
    lines += ["**Verdict**", "", *(f"- {line}" for line in doc["verdict"]), ""]
    if plot_name:
        lines += [f"![every arm's checkpoints by timesteps spent]({plot_name})", ""]
    return "\n".join(lines)
