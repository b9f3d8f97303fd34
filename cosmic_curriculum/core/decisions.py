"""What an evaluation record means to the curriculum: the gate's verdict on it, the
figures a log entry keeps of it, and its score. Pure: records in, verdicts out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cosmic_curriculum import scoring
from cosmic_curriculum.workspace.config import GateSettings

HEAD_TO_HEAD_KEYS = ("wins_a", "wins_b", "draws")
# What a log entry keeps of a threshold rule's statistics (status, REPORT.md, history).
THRESHOLD_FIGURES = (
    "measure",
    "successes",
    "episodes",
    "success_rate",
    "success_rate_ci95",
    "mean_return",
    "mean_return_ci95",
    "target",
    "verdict",
)


@dataclass(frozen=True)
class Judgement:
    """The gate's verdict on a finished record, its one-line summary, and ``figures``:
    ``threshold`` (the threshold rule's counts, interval, target and verdict) and, with
    several rules, ``rules`` (each rule's verdict), when the decision has them."""

    verdict: str
    summary: str
    figures: dict[str, Any] = field(default_factory=dict)
    # the whole decision ({verdict, rule, summary, stats}) when judged here: what a
    # record without a verdict of its own may keep as its `gate`
    gate: dict[str, Any] | None = None


def gate_verdict(settings: GateSettings, record: dict[str, Any]) -> tuple[str, str]:
    """(verdict, summary) of a finished evaluation record (see :func:`judge`)."""
    judged = judge(settings, record)
    return judged.verdict, judged.summary


def judge(settings: GateSettings, record: dict[str, Any]) -> Judgement:
    """The gate's judgement of a finished evaluation record.

    The built-in arena evaluator's record carries its own verdict (it may have stopped
    early under SPRT); any other record is judged here on its counts, with its episodes
    as all there will be (the margin rule decides, the SPRT treats them as its cap).
    The threshold rule judges its ``successes`` (default ``wins_a``) or its ``returns``
    (one per episode), the same way with its episodes as the cap. A record may lack the
    head-to-head counts (``wins_a``, ``wins_b``, ``draws``) when no rule reads them.
    Several rules are judged first with the gate's own cap (a rule still open when
    another failed is undecided), and only if none could decide with the record's
    episodes as the cap.
    """
    own = record.get("gate")
    if isinstance(own, dict) and own.get("verdict") in ("pass", "fail"):
        figures = decision_figures(own.get("stats") or {})
        return Judgement(
            str(own["verdict"]), str(own.get("summary") or counts_summary(record)), figures
        )
    missing = _missing_inputs(settings, record)
    if missing is not None:
        return Judgement("fail", missing)
    # The gate's statistics are loaded only when a decision needs them: importing the core
    # stays light (the shell's tools, the status and the reports import it).
    from cosmic_curriculum.evaluation.gate import decide

    n = int(record["episodes"])
    # A record without head-to-head counts: its episodes had no winner (no rule reads them).
    wa, wb, d = (int(record.get(k, 0)) for k in HEAD_TO_HEAD_KEYS)
    d = d if any(k in record for k in HEAD_TO_HEAD_KEYS) else n
    successes = record.get("successes")
    threshold = "threshold" in settings.rules
    returns = record.get("returns") if threshold and settings.measure == "return" else None

    def ask(cap: int) -> Any:
        return decide(
            settings,
            wa,
            wb,
            d,
            planned_episodes=cap,
            successes=None if successes is None or not threshold else int(successes),
            returns=None if returns is None else [float(r) for r in returns],
        )

    decision = ask(settings.planned_episodes) if len(settings.rules) > 1 else None
    if decision is None or decision.verdict == "continue":
        decision = ask(n)
    return Judgement(
        str(decision.verdict),
        str(decision.summary),
        decision_figures(decision.stats),
        decision.to_dict(),
    )


def judge_comparisons(
    settings: GateSettings, records: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each forgetting comparison's figures and verdict (``against = "all"``): judged by
    the stage's head-to-head rule at the corrected error rate (evaluation/forgetting.py),
    with what it played from the record's tags."""
    from cosmic_curriculum.core.rules import (
        AGAINST_BOT_KEY,
        AGAINST_EXPERIMENT_KEY,
        AGAINST_KEY,
        FAMILY_KEY,
    )
    from cosmic_curriculum.evaluation.forgetting import comparison_figures, judge_comparison

    out = []
    for record in records:
        m = int(record.get(FAMILY_KEY) or len(records))
        against = {
            "against_stage": record.get(AGAINST_KEY),
            "against_experiment": record.get(AGAINST_EXPERIMENT_KEY),
            "bot": record.get(AGAINST_BOT_KEY),
        }
        decision = judge_comparison(settings, m, record)
        out.append(comparison_figures(record, decision, m, settings, against))
    return out


def judge_gate(
    settings: GateSettings,
    record: dict[str, Any],
    comparison_records: Sequence[dict[str, Any]] | None,
) -> tuple[Judgement, list[dict[str, Any]] | None]:
    """The whole gate on an attempt: :func:`judge` of its evaluation against the
    reference, its verdict and summary combined with the forgetting comparisons'
    (``against = "all"``, each :func:`judge_comparisons`' figures, returned beside it);
    the judgement's ``figures`` and ``gate`` stay the reference's."""
    judged = judge(settings, record)
    if not comparison_records:
        return judged, None
    from cosmic_curriculum.evaluation.forgetting import combined

    comparisons = judge_comparisons(settings, comparison_records)
    verdict, summary = combined(judged.verdict, judged.summary, comparisons)
    return replace(judged, verdict=verdict, summary=summary), comparisons


def _missing_inputs(settings: GateSettings, record: dict[str, Any]) -> str | None:
    """Why the record cannot be judged by the stage's rules (a failed decision whose
    summary says so), or None; the history has checked the types and lengths."""
    n = record.get("episodes")
    if settings.head_to_head and not all(k in record for k in HEAD_TO_HEAD_KEYS):
        rules = "/".join(r for r in settings.rules if r in ("margin", "sprt"))
        return (
            f"the record has no head-to-head counts 'wins_a', 'wins_b', 'draws' for the "
            f"{rules} rule over {n} episodes; make the evaluation_command write them"
        )
    if "threshold" not in settings.rules:
        return None
    if settings.measure == "return" and not isinstance(record.get("returns"), list):
        return (
            f"the record has no 'returns' (per-episode returns) for the threshold gate "
            f"on return over {n} episodes; make the evaluation_command write them"
        )
    if settings.measure == "success" and "successes" not in record and "wins_a" not in record:
        return (
            f"the record has no 'successes' for the threshold gate on success over {n} "
            "episodes; make the evaluation_command write them"
        )
    return None


def decision_figures(stats: dict[str, Any]) -> dict[str, Any]:
    """What a log entry keeps of a decision's ``stats`` besides the counts: the threshold
    rule's figures (``threshold``) and, with several rules, each one's verdict (``rules``)."""
    found = stats.get("rules")
    several = isinstance(found, list)
    rules: list[Any] = found if isinstance(found, list) else []
    parts = [r.get("stats") for r in rules if isinstance(r, dict)] if several else [stats]
    out: dict[str, Any] = {}
    for part in parts:
        if isinstance(part, dict) and part.get("rule") == "threshold":
            out["threshold"] = {k: part[k] for k in THRESHOLD_FIGURES if k in part}
    if several:
        out["rules"] = [
            {"rule": r.get("rule"), "verdict": r.get("verdict")}
            for r in rules
            if isinstance(r, dict)
        ]
    return out


def counts_summary(record: dict[str, Any]) -> str:
    n = max(1, int(record["episodes"]))
    if "wins_a" not in record:
        return f"{record.get('successes', '?')}/{record['episodes']} successes"
    return (
        f"candidate {record['wins_a']}/{record['episodes']} ({record['wins_a'] / n:.0%}) vs "
        f"reference {record['wins_b']}/{record['episodes']} ({record['wins_b'] / n:.0%}), "
        f"{record['draws']} draws"
    )


def record_score(record: dict[str, Any]) -> float:
    """An evaluation's score: (candidate wins + draws / 2) / episodes; for a record
    without head-to-head counts its success rate, else its mean return (ranks only)."""
    episodes = int(record["episodes"])
    if "wins_a" not in record:
        if isinstance(record.get("successes"), int):
            return scoring.score(int(record["successes"]), 0, episodes, if_none=0.0)
        returns = record.get("returns")
        return sum(returns) / len(returns) if isinstance(returns, list) and returns else 0.0
    wins, draws = int(record["wins_a"]), int(record["draws"])
    # no games ranks a candidate last in the selection
    return scoring.score(wins, draws, episodes, if_none=0.0)
