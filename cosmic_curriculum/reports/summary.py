"""The curriculum at a glance, as plain data: what REPORT.md and `report`'s page show.

:func:`summarise` turns the state, the config and the evaluation history into one row per
decided attempt (counts, score, gap ± 95% interval, Elo ± 95% error, decision, override,
wall time, timesteps), the Elo ladder of the passing bots and what happens next. Elo is
chained through the evaluation records (each passing bot against its reference, stage 1's
reference at 0): no game is played. Nothing here reads a clock, so the same workspace
always gives the same summary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from cosmic_curriculum.core.next_action import REASON_HINT, next_action
from cosmic_curriculum.defaults import COMPARE_DIR
from cosmic_curriculum.evaluation import stats
from cosmic_curriculum.progress import parse_progress_line
from cosmic_curriculum.reports import md_text
from cosmic_curriculum.reports.review import (
    continued_note,
    entry_continuations,
    rule_verdicts,
    threshold_figures,
)
from cosmic_curriculum.scoring import signed
from cosmic_curriculum.workspace.config import BuiltinReference, CurriculumConfig
from cosmic_curriculum.workspace.layout import Layout, experiment_name
from cosmic_curriculum.workspace.live import format_duration
from cosmic_curriculum.workspace.state import CurriculumState, LogEntry
from cosmic_curriculum.workspace.trainer_log import launched_at

RUN = "cosmic-curriculum run"  # REPORT.md lives at the workspace root: commands run there


@dataclass
class Row:
    stage: str
    experiment: str
    attempt: int
    counts: str = "–"  # W-L-D / N
    score: str = "–"
    gap: str = "–"  # reference − candidate win rate ± 95% half-width
    elo: str = "–"  # candidate over reference ± 95% error
    threshold: str = ""  # a threshold rule's successes/N, rate (95%) vs target; "" if none
    decision: str = ""
    note: str = ""  # override or forced retry, with its reason
    wall: str = "–"
    timesteps: str = "–"


@dataclass
class Rung:
    bot: str
    stage: str
    elo: float | None  # None: no point estimate (a skipped stage, a shut-out on the way)
    err: float | None
    # 95% bounds, each None when unbounded: a shut-out has no estimate but one finite
    # bound, which the rungs above it keep (a shut-out no longer makes them all unknown)
    low: float | None = None
    high: float | None = None

    def __post_init__(self) -> None:
        if self.elo is not None and self.err is not None:
            self.low = self.elo - self.err if self.low is None else self.low
            self.high = self.elo + self.err if self.high is None else self.high


def elo_text(elo: float | None, err: float | None, low: float | None, high: float | None) -> str:
    """``+35 ± 145``; for a shut-out its one finite 95% bound, ``≥ +520`` or ``≤ −520``."""
    if elo is not None:
        return f"{signed(elo, 0)} ± {'∞' if err is None else f'{err:.0f}'}"
    if low is not None and high is None:
        return f"≥ {signed(low, 0)}"
    if high is not None and low is None:
        return f"≤ {signed(high, 0)}"
    return "–"


@dataclass
class Summary:
    status: str
    rows: list[Row] = field(default_factory=list)
    ladder: list[Rung] = field(default_factory=list)
    now: str = ""  # what runs now or what the human must decide
    commands: list[str] = field(default_factory=list)  # the commands to run next, if any
    experiments: list[tuple[str, str]] = field(default_factory=list)  # (experiment, decision)
    # against = "all": one row per forgetting comparison (FORGETTING_COLUMNS)
    forgetting: list[list[str]] = field(default_factory=list)
    study: list[str] = field(default_factory=list)  # `compare`'s verdict, when it has run


FORGETTING_COLUMNS = (
    "experiment",
    "against",
    "bot",
    "W-L-D / N",
    "score",
    "gap (95%)",
    "test (corrected error rate)",
    "verdict",
)


def summarise(
    layout: Layout, state: CurriculumState, config: CurriculumConfig, records: list[dict[str, Any]]
) -> Summary:
    by_id = {str(r.get("id")): r for r in records if r.get("id") is not None}
    out = Summary(status=state.status)
    for i, stage in enumerate(config.stages):
        label = f"{i + 1} {stage.name}"
        entries = state.stage_log(i)
        if not entries:
            out.rows.append(Row(label, "", 0, decision=_pending(state, i)))
        for entry in entries:
            record = by_id.get(entry.eval_id or "")
            out.rows.append(_row(layout, label, entry, record))
            out.experiments.append((entry.experiment, _decision(entry)))
            out.forgetting += [_comparison_row(entry, c) for c in entry.comparisons or []]
    out.ladder = ladder(state, config, by_id)
    out.study = study_verdict(layout.root / COMPARE_DIR / "compare.json")
    _next(out, layout, state, config)
    return out


def study_verdict(path: Path) -> list[str]:
    """The verdict lines of `compare`'s study (none when there is no readable one: the
    report never fails over it)."""
    import json

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    verdict = doc.get("verdict") if isinstance(doc, dict) else None
    if not isinstance(verdict, list):
        return []
    return [line for line in verdict if isinstance(line, str)]


def _pending(state: CurriculumState, i: int) -> str:
    if state.status == "done" or i < state.stage_index:
        return "passed"
    return "current" if i == state.stage_index else "pending"


def _decision(entry: LogEntry) -> str:
    return "skipped" if entry.override else entry.decision


def _row(layout: Layout, label: str, entry: LogEntry, record: dict[str, Any] | None) -> Row:
    row = Row(label, entry.experiment, entry.attempt, decision=_decision(entry))
    if entry.override:
        row.note = f"{entry.override}: {entry.reason or ''}".rstrip(": ")
    elif entry.forced_retry:
        row.note = f"forced retry: {entry.reason or ''}".rstrip(": ")
    if continuations := entry_continuations(entry):
        row.note = "; ".join(filter(None, [row.note, continued_note(continuations)]))
    counts = {**(entry.eval or {}), **(record or {})}
    figures = (entry.eval or {}).get("threshold")
    if isinstance(figures, dict):
        row.threshold = ", ".join(threshold_figures(figures))
    verdicts = rule_verdicts({"rules": (entry.eval or {}).get("rules")})
    if verdicts:
        row.decision += f" ({verdicts})"
    # a threshold gate alone: its figures, not the head-to-head counts against a reference
    alone = isinstance(figures, dict) and "rules" not in (entry.eval or {})
    heads = ("wins_a", "wins_b", "draws", "episodes")
    if not alone and all(isinstance(counts.get(k), int) for k in heads):
        wa, wb, d, n = (int(counts[k]) for k in heads)
        row.counts = f"{wa}-{wb}-{d} / {n}"
        row.score = f"{stats.score(wa, wb, d):.3f}"
        gap, half = _gap(counts)
        row.gap = f"{signed(gap, 2)} ± {half:.2f}"
        elo, err = _elo(counts)
        row.elo = elo_text(elo, err, *_elo_bounds(counts, elo, err))
    started, steps = _log_facts(layout.log(entry.experiment))
    row.wall = wall_time(started, entry.decided_at)
    row.timesteps = f"{steps:,}" if steps is not None else "–"
    return row


def _comparison_row(entry: LogEntry, c: dict[str, Any]) -> list[str]:
    """One forgetting comparison as REPORT.md's cells (text from files stays inert)."""
    counts = "-".join(str(c.get(k, "?")) for k in ("wins_a", "wins_b", "draws"))
    gap = c.get("gap_ci95")
    interval = (
        f"{signed(float(gap[0]), 2)} to {signed(float(gap[1]), 2)}"
        if isinstance(gap, list) and len(gap) == 2
        else "–"
    )
    stage = c.get("against_stage")
    beta = float(c.get("beta", 0))
    test = f"{c.get('rule')} at β {beta:.3g} (β {c.get('family_beta')} / {c.get('m')})"
    return [
        md_text.code(entry.experiment),
        f"stage {int(stage) + 1}" if isinstance(stage, int) else "?",
        md_text.code(str(c.get("bot") or "?")),
        f"{counts} / {c.get('episodes', '?')}",
        f"{float(c['score']):.3f}" if isinstance(c.get("score"), int | float) else "–",
        interval,
        md_text.text(test),
        md_text.text(str(c.get("verdict"))),
    ]


def _gap(record: dict[str, Any]) -> tuple[float, float]:
    """The record's gap and interval when it has them, else computed from its counts."""
    ci = record.get("gap_ci95")
    if isinstance(ci, list) and len(ci) == 2 and all(isinstance(x, int | float) for x in ci):
        gap = record.get("gap")
        centre = float(gap) if isinstance(gap, int | float) else (ci[0] + ci[1]) / 2
        return centre, (float(ci[1]) - float(ci[0])) / 2
    return stats.gap_interval(record["wins_a"], record["wins_b"], record["draws"])


def _elo(record: dict[str, Any]) -> tuple[float | None, float | None]:
    """Elo of the candidate over its reference and its 95% error (None when unbounded)."""
    elo, err = record.get("elo"), record.get("elo_err95")
    if not isinstance(elo, int | float) and "wins_a" not in record:
        return None, None  # a record without an opponent (a threshold gate's): no Elo
    if not isinstance(elo, int | float):
        est = stats.elo_estimate(record["wins_a"], record["wins_b"], record["draws"])
        elo, err = est.elo, est.err95
    return _finite(elo), _finite(err)


def _elo_bounds(
    record: dict[str, Any], elo: float | None, err: float | None
) -> tuple[float | None, float | None]:
    """The 95% bounds of a record's Elo; a shut-out (score 0 or 1, Elo ∓∞) gets its one
    finite bound from the score's Wilson interval, which stays inside (0, 1)."""
    if elo is not None:
        return (None, None) if err is None else (elo - err, elo + err)
    raw = [record.get(k) for k in ("wins_a", "wins_b", "draws")]
    counts = [c for c in raw if type(c) is int and c >= 0]
    if len(counts) != len(raw) or sum(counts) == 0:
        return None, None
    wins, losses, draws = counts
    low, high = stats.wilson_interval(wins + draws / 2, wins + losses + draws)
    if losses == 0 and wins + draws / 2 > 0:  # scored everything: a lower bound
        return stats.elo_from_score(low) if 0 < low < 1 else None, None
    if wins == 0 and draws == 0:  # lost everything: an upper bound
        return None, stats.elo_from_score(high) if 0 < high < 1 else None
    return None, None


def _finite(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and math.isfinite(x) else None


def _log_facts(log: Path) -> tuple[str | None, int | None]:
    """When the attempt's first launch was logged and the last timesteps it reported."""
    if not log.is_file():
        return None, None
    steps: int | None = None
    with open(log, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            at = line.find("@progress")
            if at >= 0 and (progress := parse_progress_line(line[at:])) is not None:
                steps = int(progress["timesteps"])
    return launched_at(log), steps


def wall_time(start: str | None, end: str | None) -> str:
    """From the first launch to the decision, as `status` writes durations (``42s``,
    ``4m 10s``, ``3h 05m``, ``2d 03h``): whole minutes (``H:MM``) showed every stage under
    a minute, a quick curriculum's whole table, as ``0:00``. From the two stamps alone, so
    the same workspace still gives the same report."""
    try:
        seconds = (
            datetime.fromisoformat(end or "") - datetime.fromisoformat(start or "")
        ).total_seconds()
    except (TypeError, ValueError):  # a hand-edited stamp, or naive against aware
        return "–"
    return format_duration(max(0.0, seconds))


def ladder(
    state: CurriculumState, config: CurriculumConfig, by_id: dict[str, dict[str, Any]]
) -> list[Rung]:
    """Each stage's passing bot with its Elo chained from stage 1's reference (0).

    A stage whose reference is not the previous rung (a reference of its own) restarts
    the chain at that reference (0 when it is stage 1's reference, unknown otherwise).
    """
    root = config.reference_bot
    if isinstance(root, str):
        name = Path(root).stem
    elif isinstance(root, BuiltinReference):
        name = root.builtin
    else:
        name = "exec:" + " ".join(root.exec)
    rungs = [Rung(name, "reference", 0.0, 0.0)]
    previous = rungs[0]
    for i, stage in enumerate(config.stages):
        entry = state.passing_entry(i)
        if entry is None:
            break
        own = config.stage_reference(i)
        base = previous if own is None else rungs[0] if own == root else None
        record = by_id.get(entry.eval_id or "")
        elo: float | None = None
        err: float | None = None
        low: float | None = None
        high: float | None = None
        if base is not None and record is not None:
            diff, diff_err = _elo(record)
            if base.elo is not None and diff is not None:
                elo = base.elo + diff
                if base.err is not None and diff_err is not None:
                    err = math.hypot(base.err, diff_err)  # independent evaluations
            if err is None:  # a shut-out here or below: what its bounds still say
                diff_low, diff_high = _elo_bounds(record, diff, diff_err)
                low = _plus(base.low, diff_low)
                high = _plus(base.high, diff_high)
        rung = Rung(entry.experiment, f"{i + 1} {stage.name}", elo, err, low, high)
        rungs.append(rung)
        previous = rung
    return rungs


def _plus(a: float | None, b: float | None) -> float | None:
    """A bound of a sum from the parts' bounds on the same side (None: unbounded)."""
    return None if a is None or b is None else a + b


def _next(out: Summary, layout: Layout, state: CurriculumState, config: CurriculumConfig) -> None:
    action = next_action(state, [s.name for s in config.stages], in_commit=True)
    if action.kind == "done":
        out.now = "Every stage passed: the curriculum is done."
        return
    i = state.stage_index
    name = action.stage_name or f"#{i + 1}"
    # `now` is Markdown: what comes from files goes in as inert text (md_text).
    shown = md_text.code(name)
    if action.kind == "review":
        review = layout.rel(layout.review(name))
        out.now = (
            f"**Stage {i + 1} {shown} is blocked** — {md_text.text(state.blocked_reason or '')}. "
            f"Read [the review]({review}), then decide: retry the stage once more, or "
            "accept its last attempt and move on."
        )
        out.commands = [
            f"{RUN} --force-retry {REASON_HINT}",
            f"{RUN} --skip-to-next-stage {REASON_HINT}",
        ]
        return
    if action.kind == "fix_error":
        out.now = (
            f"**Attempt error** of {md_text.code(action.experiment or '')}: "
            f"{md_text.text(action.detail or '')}. Fix the cause "
            f"(see [its log]({layout.rel(layout.log(action.experiment or ''))})); the next "
            "run retries the attempt."
        )
        out.commands = [RUN]
        return
    flight = state.in_flight
    exp = experiment_name(i, name, state.attempt)
    live = flight is not None and flight.experiment == exp and flight.phase != "decided"
    doing = f"is in phase {flight.phase}" if live and flight else "runs next"
    out.now = (
        f"Stage {i + 1} {shown}: {md_text.code(exp)} {doing} (attempt {state.attempt}); "
        "nothing to decide."
    )
