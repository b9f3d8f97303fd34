"""What the trackers are told, as plain data (no I/O): a decision's metrics and tags, an
attempt's parameters, an SB3 logger dump's scalars, the runs' names and ids."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from typing import Any

# The tracker run every decision is also logged to, beside its attempt's own.
CURRICULUM_KEY = "curriculum"
# record key → metric, for the figures every evaluation record may carry
RECORD_FIGURES = ("score", "gap", "gap_ci95", "elo", "elo_ci95", "elo_err95")
COUNTS = {"wins_a": "wins", "wins_b": "losses", "draws": "draws", "episodes": "episodes"}
# gate statistics that are settings or bookkeeping, not measures of this evaluation
NOT_MEASURES = frozenset({"alpha", "beta", "max_episodes", "planned_episodes", "pair_counts"})


def number(value: Any) -> float | None:
    """A finite float, or None (bools are 0/1; text, None, NaN and ±inf are not logged)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def flatten(prefix: str, value: Any) -> dict[str, float]:
    """Numbers under ``prefix``: a pair ``[lo, hi]`` as ``_low``/``_high``, a dict by key."""
    if isinstance(value, Mapping):
        out: dict[str, float] = {}
        for key, item in value.items():
            if key not in NOT_MEASURES:
                out.update(flatten(f"{prefix}/{key}" if prefix else str(key), item))
        return out
    if isinstance(value, list | tuple) and len(value) == 2:
        low, high = number(value[0]), number(value[1])
        pair = {f"{prefix}_low": low, f"{prefix}_high": high}
        return {k: v for k, v in pair.items() if v is not None}
    n = number(value)
    return {} if n is None else {prefix: n}


def gate_metrics(gate: Mapping[str, Any] | None) -> dict[str, float]:
    """The gate's measures: each rule's statistics under ``gate/<rule>/`` (LLR and its
    bounds for the SPRT, the success rate or mean return for the threshold, ...)."""
    if not gate:
        return {}
    stats = gate.get("stats") or {}
    rules = stats.get("rules")
    parts = rules if isinstance(rules, list) else [{"rule": gate.get("rule"), "stats": stats}]
    out: dict[str, float] = {}
    for part in parts:
        if isinstance(part, Mapping):
            out.update(flatten(f"gate/{part.get('rule') or 'rule'}", part.get("stats") or {}))
    return out


def figure(record: Mapping[str, Any], key: str) -> Any:
    """``key`` of the record, else of its gate's statistics (the first rule that has it)."""
    if record.get(key) is not None:
        return record[key]
    gate = record.get("gate")
    stats = gate.get("stats") if isinstance(gate, Mapping) else None
    if not isinstance(stats, Mapping):
        return None
    rules = stats.get("rules")
    for part in [{"stats": stats}, *(rules if isinstance(rules, list) else [])]:
        inner = part.get("stats") if isinstance(part, Mapping) else None
        if isinstance(inner, Mapping) and inner.get(key) is not None:
            return inner[key]
    return None


def decision_metrics(
    entry: Mapping[str, Any], record: Mapping[str, Any] | None, number_: int, status: str
) -> dict[str, float]:
    """A decided attempt's metrics: W/L/D, score, gap and Elo with their intervals, the
    gate's measures, the decision (1 pass, 0 fail), whether an override made it, and
    whether the curriculum is now blocked or done. ``number_`` counts decisions from 1."""
    counts = dict(entry.get("eval") or {})
    counts.update({k: v for k, v in (record or {}).items() if k in COUNTS and v is not None})
    out: dict[str, float] = {"decision_number": float(number_)}
    for key, name in COUNTS.items():
        n = number(counts.get(key))
        if n is not None:
            out[name] = n
    for key in RECORD_FIGURES:
        out.update(flatten(key, figure(record or {}, key)))
    out.update(gate_metrics((record or {}).get("gate")))
    out["stage"] = float(int(entry.get("stage_index", 0)) + 1)
    out["attempt"] = float(int(entry.get("attempt", 0)))
    out["passed"] = 1.0 if entry.get("decision") == "pass" else 0.0
    out["override"] = 1.0 if entry.get("override") else 0.0
    out["blocked"] = 1.0 if status == "blocked" else 0.0
    out["done"] = 1.0 if status == "done" else 0.0
    return out


def decision_tags(entry: Mapping[str, Any], status: str) -> dict[str, str]:
    """The decision's words: pass/fail, the override and its reason, the summary line."""
    tags = {
        "decision": str(entry.get("decision")),
        "status": status,
        "override": str(entry.get("override") or ""),
        "override_reason": str(entry.get("reason") or ""),
        "override_by": str(entry.get("by") or ""),
        "summary": str(entry.get("summary") or ""),
        "eval_id": str(entry.get("eval_id") or ""),
    }
    return {k: v for k, v in tags.items() if v}


def attempt_params(
    *,
    stage_index: int,
    stage_name: str,
    attempt: int,
    experiment: str,
    flags: list[str],
    timesteps: int | None,
    settings: Mapping[str, Any],
    candidate: int | None = None,
) -> dict[str, str]:
    """A training attempt's parameters: its stage, flags and settings, as text (every
    tracker stores parameters as strings; a list is its argv, space-joined)."""
    params: dict[str, Any] = {
        "stage": stage_index + 1,
        "stage_name": stage_name,
        "attempt": attempt,
        "experiment": experiment,
        "flags": " ".join(flags),
        "timesteps": timesteps,
        "candidate": candidate,
    }
    for key, value in settings.items():
        params[f"settings/{key}"] = value
    return {k: _text(v) for k, v in params.items() if v is not None}


def _text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return " ".join(str(v) for v in value)
    return str(value)[:500]  # MLflow's limit on a parameter's value


def sb3_scalars(key_values: Mapping[str, Any], excluded: Mapping[str, Any]) -> dict[str, float]:
    """The numbers of one SB3 logger dump (``train/loss``, ``rollout/ep_rew_mean``, ...);
    text, tensors and keys excluded from every output are left out."""
    out: dict[str, float] = {}
    for key, value in key_values.items():
        skip = excluded.get(key)
        if skip is not None and "tracker" in skip:
            continue
        n = number(value)
        if n is not None:
            out[key] = n
    return out


def run_id(curriculum_id: str, key: str) -> str:
    """A tracker run id for ``key`` (an experiment, or the curriculum itself) that is the
    same in every run of this workspace: W&B resumes it instead of opening a duplicate."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "-", key)[:40]
    digest = hashlib.sha256(f"{curriculum_id}/{key}".encode()).hexdigest()[:10]
    return f"{safe}-{digest}"
