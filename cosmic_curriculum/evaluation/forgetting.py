"""The gate against forgetting (``against = "all"``), as pure functions: counts in,
verdicts out (docs/GATES.md, "Against every earlier stage").

The candidate plays its reference under the stage's gate exactly as with
``against = "previous"`` (the "previous comparison"), and also each of the ``m`` earlier
stages' passing bots that is not that reference (the "forgetting comparisons"). A
forgetting comparison fails on a *clear regression*, and the ``m`` of them share the
gate's ``beta`` (the rate of failing a candidate as strong as the bots it plays) by an
alpha split, ``beta / m`` each (Bonferroni):

- ``sprt`` among the rules: an SPRT with the stage's ``gap`` and ``alpha`` and
  ``beta / m``: H0 "a regression of gap" (score ``0.5 - gap/2``) against H1 "no
  regression" (score 0.5); capped at ``max_episodes`` like the stage's, where one still
  undecided passes: only H0 accepted is a clear regression (so each comparison
  false-fails at most about ``beta / m``, by Wald's bound).
- ``margin`` among the rules (it has no error rate to split): an exact one-sided sign
  test on the decisive games of ``episodes`` played, H0 "score >= 0.5": it fails iff
  ``P(Binomial(wins + losses, 1/2) <= wins) <= beta / m``.

Holm's step-down would fail the gate exactly when this split does (it rejects some
hypothesis iff the smallest p-value is at most ``beta / m``); it differs only in which
further comparisons it would also call regressions, and the gate stops at the first.
"""

from __future__ import annotations

import math
from typing import Any

from cosmic_curriculum.evaluation.verdicts import GateDecision, Verdict
from cosmic_curriculum.workspace.gate_settings import GateSettings, RuleName


def comparison_rule(settings: GateSettings) -> RuleName:
    """The head-to-head rule that judges a forgetting comparison (sprt before margin)."""
    if "sprt" in settings.rules:
        return "sprt"
    if "margin" in settings.rules:
        return "margin"
    raise ValueError(f"rule {settings.rule_label}: no head-to-head rule to compare with")


def corrected_beta(settings: GateSettings, m: int) -> float:
    """Each of ``m`` forgetting comparisons' false-fail rate: ``beta / m``."""
    if m < 1:
        raise ValueError(f"m must be >= 1, got {m}")
    return settings.beta / m


def comparison_settings(settings: GateSettings, m: int) -> GateSettings:
    """The gate a forgetting comparison is played under: the SPRT with ``beta / m``, or
    (margin) the stage's fixed ``episodes``, judged by the sign test afterwards."""
    rule = comparison_rule(settings)
    update: dict[str, Any] = {"rule": rule}
    if rule == "sprt":
        update["beta"] = corrected_beta(settings, m)
    return settings.model_copy(update=update)


def sign_test_p(wins: int, losses: int) -> float:
    """One-sided p-value of H0 "the candidate scores at least 0.5": the chance of at most
    ``wins`` wins among ``wins + losses`` decisive games when each is a fair coin (draws
    say nothing of the sign). Exact up to float rounding: the binomial tail summed down
    from its largest term by the ratio of neighbours, any ``n``."""
    if wins < 0 or losses < 0:
        raise ValueError(f"counts must be >= 0, got wins {wins}, losses {losses}")
    n = wins + losses
    if n == 0 or wins >= n:
        return 1.0
    log_top = math.lgamma(n + 1) - math.lgamma(wins + 1) - math.lgamma(losses + 1) - n * math.log(2)
    total, term = 1.0, 1.0
    for k in range(wins, 0, -1):  # P(k-1) / P(k) = k / (n - k + 1): terms only shrink
        term *= k / (n - k + 1)
        total += term
        if term < 1e-17 * total:
            break
    return min(1.0, math.exp(log_top) * total)


def sign_test_critical(n_max: int, level: float) -> list[int]:
    """For each number of decisive games ``n`` in ``0..n_max``, the most wins that still
    fail the sign test at ``level`` (-1: none does). The simulator's lookup table."""
    out, cutoff = [], -1
    for n in range(n_max + 1):
        # one more game only lowers the tail of each win count, so the most failing wins
        # never shrink as n grows: start from the last n's (the table costs O(n_max) tests)
        while cutoff + 1 <= n and sign_test_p(cutoff + 1, n - cutoff - 1) <= level:
            cutoff += 1
        out.append(cutoff)
    return out


def sign_test_decision(settings: GateSettings, m: int, record: dict[str, Any]) -> GateDecision:
    """A margin stage's forgetting comparison: the sign test at ``beta / m``."""
    from cosmic_curriculum.evaluation import stats

    wa, wb, d = (int(record[k]) for k in ("wins_a", "wins_b", "draws"))
    level = corrected_beta(settings, m)
    p = sign_test_p(wa, wb)
    verdict: Verdict = "fail" if p <= level else "pass"
    info: dict[str, Any] = dict(stats.describe(wa, wb, d))
    info.update(rule="sign", p_value=p, beta=level, family_beta=settings.beta, m=m)
    summary = (
        f"{stats.counts_summary(wa, wb, d)}, sign test p {p:.3g} vs beta/{m} {level:.3g} "
        f"→ {verdict}"
    )
    return GateDecision(verdict, "sign", summary, info)


def judge_comparison(settings: GateSettings, m: int, record: dict[str, Any]) -> GateDecision:
    """A finished forgetting comparison's decision: a margin stage's sign test on its
    counts; an sprt stage's, the record's own (the arena evaluator's SPRT under
    :func:`comparison_settings`) when it has one, else the SPRT on its counts with its
    episodes as all there are."""
    if not all(k in record for k in ("wins_a", "wins_b", "draws")):
        n = record.get("episodes")
        return GateDecision("fail", "forgetting", f"no head-to-head counts over {n} episodes")
    if comparison_rule(settings) == "margin":  # whatever margin verdict the record holds
        return sign_test_decision(settings, m, record)
    own = record.get("gate")
    if isinstance(own, dict) and own.get("verdict") in ("pass", "fail"):
        decision = GateDecision(
            own["verdict"], str(own.get("rule")), str(own.get("summary")), own.get("stats") or {}
        )
    else:
        from cosmic_curriculum.evaluation.gate import decide

        wa, wb, d = (int(record[k]) for k in ("wins_a", "wins_b", "draws"))
        cs = comparison_settings(settings, m)
        decision = decide(cs, wa, wb, d, planned_episodes=wa + wb + d)
    return _no_fail_at_cap(decision)


def _no_fail_at_cap(decision: GateDecision) -> GateDecision:
    """A forgetting comparison's SPRT still undecided at the cap is no clear regression:
    it passes (failing on a negative LLR there, as the stage's own SPRT does, would add
    the cap's false fails to each of the ``m`` comparisons: measured in docs/GATES.md)."""
    if decision.verdict != "fail" or not decision.stats.get("decided_at_cap"):
        return decision
    summary = decision.summary.removesuffix("→ fail").rstrip()
    stats = {**decision.stats, "undecided_at_cap": True}
    return GateDecision("pass", decision.rule, f"{summary} → pass (undecided at the cap)", stats)


def comparison_figures(
    record: dict[str, Any],
    decision: GateDecision,
    m: int,
    settings: GateSettings,
    against: dict[str, Any],
) -> dict[str, Any]:
    """What the log entry keeps of one forgetting comparison (status, REPORT.md);
    ``against``: which earlier stage's bot it played (``against_stage``, ``bot``, ...)."""
    stats = decision.stats
    out: dict[str, Any] = {
        **against,
        "eval_id": record.get("id"),
        "rule": decision.rule,
        "verdict": decision.verdict,
        "beta": corrected_beta(settings, m),
        "family_beta": settings.beta,
        "m": m,
    }
    for key in ("wins_a", "wins_b", "draws", "episodes"):
        if key in record:
            out[key] = record[key]
    for key in ("score", "gap_ci95", "llr", "p_value"):
        if key in stats:
            out[key] = stats[key]
    return out


def combined(
    previous_verdict: str, previous_summary: str, comparisons: list[dict[str, Any]]
) -> tuple[str, str]:
    """The gate's verdict and summary: the previous comparison's decision, failed by any
    forgetting comparison's clear regression (each ``comparison_figures``)."""
    if not comparisons:
        return previous_verdict, previous_summary
    failed = [c for c in comparisons if c.get("verdict") != "pass"]
    verdict = "fail" if previous_verdict != "pass" or failed else "pass"
    parts = [
        f"stage {int(c['against_stage']) + 1} ({c.get('bot')}): {_score(c)} → {c.get('verdict')}"
        for c in comparisons
    ]
    said = f"{previous_summary}; against earlier stages: {'; '.join(parts)}"
    if failed and previous_verdict == "pass":
        names = ", ".join(f"stage {int(c['against_stage']) + 1}" for c in failed)
        said += f" ⇒ fail (a clear regression against {names})"
    else:
        said += f" ⇒ {verdict}"
    return verdict, said


def _score(c: dict[str, Any]) -> str:
    if "wins_a" not in c:
        return "no counts"
    return f"{c['wins_a']}–{c['wins_b']} ({c['draws']} draws), score {float(c.get('score', 0)):.2f}"
