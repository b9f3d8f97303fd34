"""An arm's stages.toml: the parent's as data, changed only where the arm differs, and
written as TOML that reads back to the same data."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from cosmic_curriculum import DATA_DIR
from cosmic_curriculum.compare.arms import plan_arm
from cosmic_curriculum.compare.derive import arm_table, toml_text

PARENT: dict[str, Any] = {
    "max_retries": 2,
    "reference_bot": {"builtin": "random"},
    "env": {"kind": "gymnasium", "id": "A-v0", "kwargs": {"size": 5, "odd key": 1.5}},
    "gate": {"rule": ["threshold", "sprt"], "target": 0.8, "deterministic": False},
    "stages": [
        {"name": "a", "timesteps": 10, "flags": ["--x", "1"]},
        {"name": "b", "timesteps": 30, "env": {"id": "B-v0"}, "gate": {"target": 0.9}},
    ],
}


@pytest.mark.parametrize(
    ("arm", "stages", "steps", "retries"),
    [
        ("curriculum", ["a", "b"], [10, 30], 2),
        ("last-stage", ["b"], [40], 0),
        ("stage:a", ["a"], [40], 0),
    ],
)
def test_an_arm_keeps_the_parent_but_its_stages_and_seed(
    arm: str, stages: list[str], steps: list[int], retries: int
) -> None:
    plan = plan_arm(arm, ["a", "b"], [10, 30])
    table = arm_table(PARENT, plan, seed=7, every=4, keep=12)
    assert [s["name"] for s in table["stages"]] == stages
    assert [s["timesteps"] for s in table["stages"]] == steps
    assert table["max_retries"] == retries
    for stage in table["stages"]:
        assert stage["flags"][-6:] == [
            "--seed",
            "7",
            "--checkpoint-every",
            "4",
            "--keep-checkpoints",
            "12",
        ]
    assert table["env"] == PARENT["env"] and table["gate"] == PARENT["gate"]
    if arm == "last-stage":
        assert table["stages"][0]["env"] == {"id": "B-v0"}  # the stage's own settings come along
    assert tomllib.loads(toml_text(table)) == table
    assert PARENT["stages"][0]["flags"] == ["--x", "1"]  # the parent's data is not changed


@pytest.mark.parametrize(
    "value",
    [
        'quote " and \\ backslash',
        "tab\tnewline\n",
        "del\x7f",
        "ünïcode ✓",
        float("inf"),
        -0.5,
        10**15,
        True,
    ],
)
def test_values_survive_the_round_trip(value: Any) -> None:
    table = {"k": value, "t": {"nested": {"v": [value, value]}}}
    assert tomllib.loads(toml_text(table)) == table


def test_the_doorkey_preset_round_trips() -> None:
    raw = tomllib.loads((DATA_DIR / "presets" / "doorkey.toml").read_text())
    names = [s["name"] for s in raw["stages"]]
    plan = plan_arm("curriculum", names, [s["timesteps"] for s in raw["stages"]])
    table = arm_table(raw, plan, seed=0, every=1, keep=3)
    assert tomllib.loads(toml_text(table)) == table
