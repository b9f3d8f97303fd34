"""A gate's decision as data, and how several rules' decisions make one (no I/O).

A stage may require several rules (``rule = ["threshold", "sprt"]``): each judges the
same evaluation's episodes, and the candidate passes only when every rule passes. The
combination is decided as soon as its outcome is: any rule failed (the rest cannot undo
it), or all passed; until then it continues, so a sequential evaluation stops at the
first look where that holds, capped as each rule is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Verdict = Literal["pass", "fail", "continue"]


@dataclass(frozen=True)
class GateDecision:
    """What the gate concluded from the counts so far.

    ``verdict`` is ``"continue"`` while the rule wants more episodes. ``summary`` is one
    human line (counts, gap ± 95%, Elo ± 95%, the LLR for ``sprt``, → verdict); ``stats``
    is JSON-ready (counts, score, intervals, Elo, rule parameters, LLR and bounds). A
    decision of several rules has ``rule`` ``"threshold+sprt"`` and ``stats["rules"]``:
    each rule's own ``{rule, verdict, summary, stats}``.
    """

    verdict: Verdict
    rule: str
    summary: str
    stats: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "rule": self.rule,
            "summary": self.summary,
            "stats": self.stats,
        }


def combined_verdict(verdicts: Sequence[Verdict]) -> Verdict:
    """Fail when any rule failed, pass when every rule passed, else continue."""
    if not verdicts:
        raise ValueError("combined_verdict needs at least one rule's verdict")
    if "fail" in verdicts:
        return "fail"
    return "pass" if all(v == "pass" for v in verdicts) else "continue"


def combine(decisions: Sequence[GateDecision]) -> GateDecision:
    """One decision of several rules judged on the same episodes.

    A rule still ``continue`` when another failed is shown as ``undecided``: the
    evaluation stopped because the outcome was known, not because that rule decided."""
    if len(decisions) == 1:
        return decisions[0]
    verdict = combined_verdict([d.verdict for d in decisions])
    parts = []
    for d in decisions:
        said = d.summary
        if d.verdict == "continue" and verdict != "continue":
            said = said.removesuffix("→ continue").rstrip() + " → undecided"
        parts.append(f"{d.rule}: {said}")
    rule = "+".join(d.rule for d in decisions)
    summary = f"{'; '.join(parts)} ⇒ {verdict}"
    shown = [
        {
            "rule": d.rule,
            "verdict": "undecided"
            if d.verdict == "continue" and verdict != "continue"
            else d.verdict,
            "summary": d.summary,
            "stats": d.stats,
        }
        for d in decisions
    ]
    return GateDecision(verdict, rule, summary, {"rule": rule, "rules": shown})
