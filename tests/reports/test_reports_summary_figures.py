"""REPORT's figures that misled: wall times floored to whole minutes (every stage under a
minute was `0:00`), and a shut-out's infinite Elo that made every later rung unknown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes.workspace import make_workspace

from cosmic_curriculum.evaluation import stats
from cosmic_curriculum.reports.markdown import blocks, markdown
from cosmic_curriculum.reports.summary import Rung, elo_text, ladder, summarise, wall_time
from cosmic_curriculum.scoring import signed
from cosmic_curriculum.workspace.config_file import load_config
from cosmic_curriculum.workspace.layout import Layout
from cosmic_curriculum.workspace.state import CurriculumState, LogEntry
from cosmic_curriculum.workspace.state_file import save_state

T0 = "2026-01-01T00:00:00+00:00"

WALL = [
    ("2026-01-01T00:00:42+00:00", "42s"),  # was 0:00
    ("2026-01-01T00:00:00+00:00", "0s"),
    ("2026-01-01T00:04:10+00:00", "4m 10s"),
    ("2026-01-01T01:02:05+00:00", "1h 02m"),
    ("2026-01-03T03:00:00+00:00", "2d 03h"),
    ("2025-12-31T23:59:00+00:00", "0s"),  # a clock set back: never negative
    ("2026-01-01T00:00:42", "–"),  # naive against aware: unknown, not a traceback
    ("not a time", "–"),
    (None, "–"),
]


@pytest.mark.parametrize(("end", "shown"), WALL)
def test_wall_time_keeps_seconds_under_an_hour(end: str | None, shown: str) -> None:
    assert wall_time(T0, end) == shown
    assert wall_time(None, end) == "–"


def _ladder(tmp_path: Path, first: dict[str, Any]) -> list[Rung]:
    toml = tmp_path / "stages.toml"
    toml.write_text("".join(f'[[stages]]\nname = "{n}"\n' for n in ("a", "b", "c")))
    log = [
        LogEntry(stage_index=i, attempt=0, decision="pass", experiment=f"e{i}", eval_id=f"r{i}")
        for i in range(3)
    ]
    later = {"wins_a": 12, "wins_b": 8, "draws": 0, "elo": 50.0, "elo_err95": 40.0}
    records = {
        "r0": {"id": "r0", **first},
        "r1": {"id": "r1", **later},
        "r2": {"id": "r2", **later},
    }
    return ladder(CurriculumState(log=log), load_config(toml), records)


def test_a_shut_out_bounds_every_later_elo_instead_of_erasing_it(tmp_path: Path) -> None:
    # 20-0 against random: the evaluator records no finite Elo
    rungs = _ladder(tmp_path, {"wins_a": 20, "wins_b": 0, "draws": 0, "elo": None})
    bound = stats.elo_from_score(stats.wilson_interval(20, 20)[0])
    assert 0 < bound < 1000
    assert [(r.elo, r.err, r.high) for r in rungs[1:]] == [(None, None, None)] * 3
    assert [r.low for r in rungs[1:]] == pytest.approx([bound, bound + 10, bound + 20])
    shown = [elo_text(r.elo, r.err, r.low, r.high) for r in rungs[1:]]
    assert shown == [f"≥ {signed(x, 0)}" for x in (bound, bound + 10, bound + 20)]


def test_a_shut_out_loss_is_an_upper_bound_and_counts_without_one_are_unknown(
    tmp_path: Path,
) -> None:
    lost = _ladder(tmp_path, {"wins_a": 0, "wins_b": 20, "draws": 0})
    assert lost[1].low is None and lost[1].high is not None and lost[1].high < 0
    assert elo_text(None, None, lost[1].low, lost[1].high).startswith("≤ −")
    assert lost[2].high == pytest.approx(lost[1].high + 90)
    exact = _ladder(
        tmp_path, {"wins_a": 12, "wins_b": 8, "draws": 0, "elo": 70.0, "elo_err95": 30.0}
    )
    assert [r.elo for r in exact[1:]] == [70.0, 120.0, 170.0]  # the exact chain is unchanged
    assert elo_text(None, None, None, None) == "–"


def test_report_md_shows_the_bound_of_a_shut_out(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", stages=["score", "defend"], git_repo=False)
    state = CurriculumState(
        stage_index=2,
        status="done",
        log=[
            LogEntry(stage_index=i, attempt=0, decision="pass", experiment=f"e{i}", eval_id=f"r{i}")
            for i in range(2)
        ],
    )
    save_state(ws / "curriculum_state.json", state)
    shut_out = {"id": "r0", "wins_a": 20, "wins_b": 0, "draws": 0, "episodes": 20, "elo": None}
    later = {"id": "r1", "wins_a": 12, "wins_b": 8, "draws": 0, "episodes": 20, "elo": 50.0}
    (ws / "eval_history.json").write_text(json.dumps([shut_out, {**later, "elo_err95": 40.0}]))
    layout = Layout(ws)
    records = json.loads(layout.history.read_text())
    data = summarise(layout, state, load_config(layout.config), records)
    text = markdown(blocks(layout, data), lambda rel: False)
    ladder_part = text.split("Elo ladder", 1)[1]
    assert "∞" not in ladder_part and "| – |" not in ladder_part, ladder_part
    assert ladder_part.count("≥ +") == 2 and "one-sided" in ladder_part
