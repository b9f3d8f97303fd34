"""The study's document, table and report from rows (pure): intervals, head to head by
returns on the same seeds, and the verdict naming a blocked or over-budget arm."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from config_helpers import write

from cosmic_curriculum.compare.arms import plan_arm
from cosmic_curriculum.compare.measure import Probe
from cosmic_curriculum.compare.render import report_md, table_lines
from cosmic_curriculum.compare.results import document, paired_score
from cosmic_curriculum.compare.study import CompareOptions, Study
from cosmic_curriculum.workspace.config_file import load_config

TOML = """\
reference_bot = {builtin = "random"}
[env]
kind = "gymnasium"
id = "FrozenLake-v1"
[[stages]]
name = "one"
timesteps = 40
[[stages]]
name = "two"
timesteps = 60
"""


def _study(tmp_path: Path, target: float | None) -> Study:
    config = load_config(write(tmp_path, TOML))
    plans = [plan_arm(a, ["one", "two"], [40, 60]) for a in ("curriculum", "last-stage")]
    probe = Probe(config.stage_env(1), "PPO", 7, None, True)
    return Study(tmp_path, config, {}, plans, [0, 1], "gymnasium", probe, None, "success", target)


def _row(arm: str, seed: int, returns: list[float], **kw: Any) -> dict[str, Any]:
    wins = sum(r > 0 for r in returns)
    final = {
        "episodes": len(returns),
        "successes": wins,
        "success_rate": wins / len(returns),
        "mean_return": sum(returns) / len(returns),
        "returns": returns,
        "reference_returns": [0.0] * len(returns),
    }
    row = {"arm": arm, "seed": seed, "timesteps": 100, "status": "done", "stages": []}
    return {**row, "final": final, "first_target_at": None, "points": [[100, 0.5]], **kw}


@pytest.mark.parametrize(
    ("mine", "theirs", "s"),
    [([1, 0, 1], [0, 0, 1], 4 / 6), ([0, 0], [1, 1], 0.0), ([1, 1], [1, 1], 0.5)],
)
def test_paired_score_by_return_on_the_same_seeds(
    mine: list[float], theirs: list[float], s: float
) -> None:
    assert paired_score(mine, theirs) == pytest.approx(s)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({}, None),
        (
            {"status": "blocked", "timesteps": 40},
            "curriculum was blocked on seed 1 after 40 timesteps",
        ),
        (
            {"timesteps": 160},
            "curriculum spent more than the budget of 100 timesteps on some seeds (seed 1: 160",
        ),
    ],
)
def test_the_verdict_names_an_arm_that_did_not_spend_the_budget(
    tmp_path: Path, extra: dict[str, Any], says: str | None
) -> None:
    rows = [
        _row("curriculum", 0, [1, 1, 0, 1]),
        _row("curriculum", 1, [1, 0, 0, 1], **extra),
        _row("last-stage", 0, [0, 0, 0, 1]),
        _row("last-stage", 1, [0, 0, 1, 0]),
    ]
    doc = document(_study(tmp_path, None), rows, CompareOptions(tmp_path))
    named = [v for v in doc["verdict"] if "blocked" in v or "more than the budget" in v]
    assert named == ([] if says is None else [next(v for v in named if says in v)])
    assert any("2 against 2 seeds cannot show a difference" in v for v in doc["verdict"])
    first = doc["arms"][0]["final"]
    assert first["success_rate"] == 0.75 and first["vs_reference"] == pytest.approx(0.875)
    lo, hi = first["success_interval"]
    assert lo < 0.75 < hi and "returns" not in first
    # 2 x 2 seed pairings of curriculum against last-stage, episode by episode.
    assert doc["head_to_head"]["curriculum vs last-stage"] == pytest.approx(0.6875)
    assert doc["head_to_head"]["last-stage vs curriculum"] == pytest.approx(0.3125)


def test_table_and_report_show_every_row_and_the_verdict(tmp_path: Path) -> None:
    rows = [_row("curriculum", 0, [1, 1], first_target_at=60), _row("last-stage", 0, [0, 1])]
    doc = document(_study(tmp_path, 0.9), rows, CompareOptions(tmp_path))
    table = table_lines(doc)
    assert table[0].split()[:3] == ["arm", "seed", "timesteps"] and "first 0.9" in table[0]
    assert "60" in table[1] and table[2].split()[0] == "last-stage"
    assert any(line.startswith("verdict: curriculum reached 0.9 on 1 of 1 seeds") for line in table)
    report = report_md(doc, "compare.png")
    assert "| curriculum | 0 | 100 |" in report and "![every arm's checkpoints" in report
