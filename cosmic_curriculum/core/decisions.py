"""What an evaluation record means to the curriculum: the gate's verdict on it and its
score. Pure: records in, verdicts out."""

from __future__ import annotations

from typing import Any

from cosmic_curriculum import scoring
from cosmic_curriculum.workspace.config import GateSettings
from cosmic_curriculum.workspace.state import COUNT_KEYS


def gate_verdict(settings: GateSettings, record: dict[str, Any]) -> tuple[str, str]:
    """(verdict, summary) of a finished evaluation record.

    The built-in evaluator's record carries its own verdict (it may have stopped early
    under SPRT); an evaluation command's record is judged here on its counts, with its
    episodes as all there will be (the margin rule decides, the SPRT treats them as its cap).
    The threshold rule judges its ``successes`` (default ``wins_a``) or its ``returns``
    (one per episode), the same way with its episodes as the cap.
    """
    own = record.get("gate")
    if isinstance(own, dict) and own.get("verdict") in ("pass", "fail"):
        return str(own["verdict"]), str(own.get("summary") or counts_summary(record))
    # The gate's statistics are loaded only when a decision needs them: importing the core
    # stays light (the shell's tools, the status and the reports import it).
    from cosmic_curriculum.evaluation.gate import decide

    wa, wb, d, n = (int(record[k]) for k in COUNT_KEYS)
    if settings.rule == "threshold":
        # `successes` (else the candidate's wins) or `returns`, one per episode; the
        # history has checked their types and lengths.
        if settings.measure == "return" and not isinstance(record.get("returns"), list):
            return "fail", (
                f"the record has no 'returns' (per-episode returns) for the threshold gate "
                f"on return over {n} episodes; make the evaluation_command write them"
            )
        returns = record.get("returns") if settings.measure == "return" else None
        successes = record.get("successes")
        decision = decide(
            settings,
            wa,
            wb,
            d,
            planned_episodes=n,
            successes=None if successes is None else int(successes),
            returns=None if returns is None else [float(r) for r in returns],
        )
        return str(decision.verdict), str(decision.summary)
    decision = decide(settings, wa, wb, d, planned_episodes=n)
    return str(decision.verdict), str(decision.summary)


def counts_summary(record: dict[str, Any]) -> str:
    n = max(1, int(record["episodes"]))
    return (
        f"candidate {record['wins_a']}/{record['episodes']} ({record['wins_a'] / n:.0%}) vs "
        f"reference {record['wins_b']}/{record['episodes']} ({record['wins_b'] / n:.0%}), "
        f"{record['draws']} draws"
    )


def record_score(record: dict[str, Any]) -> float:
    """An evaluation's score: (candidate wins + draws / 2) / episodes."""
    wins, draws, episodes = (int(record[k]) for k in ("wins_a", "draws", "episodes"))
    # no games ranks a candidate last in the selection
    return scoring.score(wins, draws, episodes, if_none=0.0)
