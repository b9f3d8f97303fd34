"""Status tables and review summaries (read-only views of state, history and config).

Imported by `cosmic-curriculum status`, so it must stay light: no torch, no
stable-baselines3, no GitPython, no curriculum loop.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cosmic_curriculum.errors import ConfigError, CurriculumError
from cosmic_curriculum.reports.review import attempt_row
from cosmic_curriculum.scoring import signed
from cosmic_curriculum.workspace import history
from cosmic_curriculum.workspace.layout import HISTORY_FILE, STATE_FILE, Layout
from cosmic_curriculum.workspace.trainer_log import latest_progress

if TYPE_CHECKING:  # the models import pydantic: `status` loads them only on a cache miss
    from cosmic_curriculum.workspace.config import CurriculumConfig
    from cosmic_curriculum.workspace.state import Continuation, LogEntry

RUN = "cosmic-curriculum run"
# Rows past the configured stages come from the state alone, and a hand-edited state can
# point anywhere (stage_index 100000000): list at most this many of them without attempts.
MAX_UNCONFIGURED_ROWS = 10


def status_data(workspace: Path, config_path: Path | None = None) -> dict[str, Any]:
    """Everything `status` shows, as JSON-ready data: the facts stored from the validated
    files (cached while those files stay the same), then what the in-flight attempt's log
    and the live run say now."""
    from cosmic_curriculum.status import cache as status_cache

    ws = Path(workspace).resolve()
    cfg_path = Path(config_path) if config_path else ws / "stages.toml"
    if not (ws / STATE_FILE).is_file() and not cfg_path.is_file():
        from cosmic_curriculum.workspace.locate import where_to_run

        raise ConfigError(
            f"--workspace {ws}: not a cosmic-curriculum workspace (no {STATE_FILE}, no "
            f"{cfg_path.name}); {where_to_run(ws, 'cosmic-curriculum status')}"
        )
    key = status_cache.inputs_key(ws, cfg_path)
    data = status_cache.lookup(ws, key) if key else None
    if data is None:
        data = stored_facts(ws, cfg_path)
        if key:
            logs = [row["experiment"] for stage in data["stages"] for row in stage["trend"]]
            status_cache.store(ws, cfg_path, key, data, logs)
    return add_live_facts(add_commit_facts(add_flight_facts(data, ws), ws), ws)


def stored_facts(ws: Path, cfg_path: Path) -> dict[str, Any]:
    """What `status` derives from stages.toml, the state, the history and the decided
    attempts' logs (validated with the pydantic models), as JSON would give it back."""
    from cosmic_curriculum.workspace.config_file import load_config
    from cosmic_curriculum.workspace.lost_files import check_config_not_lost, check_nothing_lost
    from cosmic_curriculum.workspace.state_file import check_stage_range, load_state

    check_nothing_lost(ws)
    state = load_state(ws / STATE_FILE)
    config: CurriculumConfig | None = None
    config_error: str | None = None
    try:
        check_config_not_lost(ws, cfg_path)
        config = load_config(cfg_path)
    except CurriculumError as exc:
        config_error = str(exc)
    if config is not None:
        try:
            # `run` refuses a state pointing past the configured stages; say why here too.
            check_stage_range(state, len(config.stages), ws / STATE_FILE)
        except CurriculumError as exc:
            config_error = str(exc)
    ws_flag = "" if ws == Path.cwd().resolve() else f" --workspace {shlex.quote(str(ws))}"
    stages: list[dict[str, Any]] = []
    names = [s.name for s in config.stages] if config else []
    evaluations = history.load(ws / HISTORY_FILE)
    from cosmic_curriculum.status.trends import stage_trend  # it builds on this module

    by_id = {r["id"]: r for r in evaluations if isinstance(r.get("id"), str)}
    n_stages = max(len(names), state.stage_index + (0 if state.status == "done" else 1))
    logged: dict[int, list[LogEntry]] = {}
    for entry in state.log:  # one pass: never a scan of the log per stage
        logged.setdefault(entry.stage_index, []).append(entry)
    shown = set(range(min(n_stages, len(names) + MAX_UNCONFIGURED_ROWS)))
    shown |= {i for i in [*logged, state.stage_index] if i < n_stages}
    for i in sorted(shown):
        name = names[i] if i < len(names) else f"#{i + 1}"
        margin = config.stage_gate(i).regression_margin if config and i < len(names) else None
        attempts = [attempt_row(e, margin) for e in logged.get(i, [])]
        if state.status == "done" or i < state.stage_index:
            stage_status = "passed"
        elif i == state.stage_index:
            stage_status = state.status if state.status == "blocked" else "current"
        else:
            stage_status = "pending"
        trend = stage_trend(state.stage_log(i), by_id, ws / "logs")
        for row in attempts:
            row["interval"] = decision_interval(by_id.get(row["eval_id"] or ""), row["summary"])
        stages.append(
            {"index": i, "name": name, "status": stage_status, "attempts": attempts, "trend": trend}
        )
    flight = state.in_flight
    in_flight = None
    if flight is not None and flight.phase != "committed":
        in_flight = {
            "experiment": flight.experiment,
            "phase": flight.phase,
            "stage_index": flight.stage_index,
            "attempt": flight.attempt,
            "started_at": flight.started_at,
            "interrupted": flight.interrupted,
            "error": flight.error,
            "last_progress": flight.last_progress,
            "continuations": _continuations(flight.continuations),
            # each recorded trainer group, to tell an orphan that outlived its run
            "trainers": [
                {"experiment": name, "pgid": pgid, "pid": pid, "start": start}
                for name, pgid, pid, start in [
                    (flight.experiment, flight.pgid, flight.pid, flight.pid_start_time),
                    *(
                        (c.experiment, c.pgid, c.pid, c.pid_start_time)
                        for c in flight.candidates or []
                    ),
                ]
                if pgid is not None and pid is not None
            ],
        }
        if flight.candidates:
            in_flight["chosen"] = flight.chosen
            in_flight["candidates"] = [
                {
                    "k": c.k,
                    "experiment": c.experiment,
                    "seed": c.seed,
                    "phase": c.phase,
                    "score": c.score,
                    "chosen": c.k == flight.chosen,
                    "error": c.error,
                    "last_progress": c.last_progress,
                    "continuations": _continuations(c.continuations),
                }
                for c in flight.candidates
            ]
    from cosmic_curriculum.core.next_action import describe, next_action

    def command(*flags: str) -> str:
        return " ".join([RUN, *flags]) + ws_flag

    next_step = describe(next_action(state, names, config_error), command)
    data = {
        "workspace": str(ws),
        "status": state.status,
        "stage_index": state.stage_index,
        "attempt": state.attempt,
        "stages": stages,
        "stages_not_shown": n_stages - len(stages),
        "in_flight": in_flight,
        "blocked_reason": state.blocked_reason,
        "last_error": state.last_error,
        "push_pending": state.push_pending,
        "evaluations": len(evaluations),
        "config_error": config_error,
        # False: stages.toml is missing or invalid (the CLI then exits 2).
        "config_loaded": config is not None,
        "next": next_step,
    }
    result: dict[str, Any] = json.loads(json.dumps(data))  # the same, cached or not
    return result


def _continuations(done: list[Continuation] | None) -> list[dict[str, Any]]:
    return [c.model_dump(mode="json", exclude_none=True) for c in done or []]


_SUMMARY_INTERVAL = re.compile(r"gap (\S+ ± \S+), Elo (\S+ ± \S+)")


def decision_interval(record: dict[str, Any] | None, summary: str | None) -> str | None:
    """``gap +0.11 ± 0.19, Elo −38 ± 66`` of a decision: from its history record's
    statistics (built-in evaluator), else from the gate's summary (an evaluation command's
    counts are judged by `gate.decide`, whose summary states them)."""
    if record and isinstance(record.get("gap"), float | int) and record.get("gap_ci95"):
        gap, (lo, hi) = float(record["gap"]), record["gap_ci95"]
        half = max(float(hi) - gap, gap - float(lo))
        elo, err = record.get("elo"), record.get("elo_err95")
        if elo is None:
            elo_text = "−∞" if record.get("wins_a") == 0 else "+∞"
        else:
            elo_text = f"{signed(float(elo), 0)} ± {'∞' if err is None else f'{err:.0f}'}"
        return f"gap {signed(gap, 2)} ± {half:.2f}, Elo {elo_text}"
    found = _SUMMARY_INTERVAL.search(summary or "")
    return f"gap {found[1]}, Elo {found[2]}" if found else None


def add_flight_facts(data: dict[str, Any], ws: Path) -> dict[str, Any]:
    """What the attempt in flight is doing now, from its trainer's log (it grows while the
    attempt trains, so it is never cached): its row at the end of its stage's trend, and
    the last progress line of its training (or of each training candidate's)."""
    from cosmic_curriculum.status.trends import flight_trend

    flight = data["in_flight"]
    if flight is None:
        return data
    paths = Layout(ws)
    for stage in data["stages"]:
        if stage["index"] == flight["stage_index"]:
            row = flight_trend(flight["experiment"], flight["attempt"], flight["phase"], paths.logs)
            stage["trend"].append(row)
    if flight["phase"] == "training" and not flight.get("candidates"):
        progress = latest_progress(paths.log(flight["experiment"]))
        flight["last_progress"] = progress or flight["last_progress"]
    for candidate in flight.get("candidates") or []:
        if candidate["phase"] == "training":
            progress = latest_progress(paths.log(candidate["experiment"]))
            candidate["last_progress"] = progress or candidate["last_progress"]
    return data


def add_commit_facts(data: dict[str, Any], ws: Path) -> dict[str, Any]:
    """A decision saved but not yet in git (``.cosmic-curriculum.commit``): not part of
    the cached facts, it is read every time. The next `run` makes that commit first."""
    from cosmic_curriculum.workspace.pending_commit import pending

    owed = pending(Layout(ws))
    data["commit_pending"] = owed
    if owed and data["status"] == "done" and not data["config_error"]:
        ws_flag = "" if ws == Path.cwd().resolve() else f" --workspace {shlex.quote(str(ws))}"
        data["next"] = f"`{RUN}{ws_flag}` to commit it (every stage passed)"
    return data


def add_live_facts(data: dict[str, Any], ws: Path) -> dict[str, Any]:
    """The live run (if one holds the workspace) added to :func:`status_data`'s facts, or
    the orphan of a dead run that still holds it (a trainer or evaluation command keeps
    the lock it inherited); while either runs there is nothing to run next."""
    from cosmic_curriculum.workspace.live import live_run, orphan

    live = live_run(ws, data["in_flight"])
    data["live"] = live
    data["orphan"] = None if live is not None else orphan(ws, data["in_flight"])
    ws_flag = "" if ws == Path.cwd().resolve() else f" --workspace {shlex.quote(str(ws))}"
    if live is not None and not data["config_error"]:
        data["next"] = (
            f"nothing while it runs: `cosmic-curriculum status --watch{ws_flag}` follows it, "
            f"`cosmic-curriculum attach{ws_flag}` shows its terminal"
        )
    elif data["orphan"] is not None:
        data["next"] = orphan_advice(data["orphan"])
    return data


def orphan_advice(found: dict[str, Any]) -> str:
    """What to do while an orphan of a dead run holds the workspace (`run` would refuse)."""
    what, experiment, pgid = found["what"], found["experiment"], found["pgid"]
    if what == "trainer":
        return (
            f"nothing while the trainer of {experiment} (process group {pgid}), left by a run "
            "that died, holds this workspace: wait for it to finish (its result is used when "
            f"you run again), or stop it with `kill -TERM -{pgid}` and run again to resume "
            "from its last checkpoint"
        )
    if what == "evaluation":
        return (
            f"nothing while the evaluation of {experiment}, left by a run that died, holds "
            "this workspace: wait for it to finish (its record is used when you run again)"
        )
    pids = ", ".join(str(p) for p in found.get("pids") or []) or "unknown"
    return (
        f"nothing while a process left by a run that died (pid {pids}) holds this "
        "workspace's lock: wait for it, or stop it, then run again"
    )
