"""An arm's own `stages.toml`, derived from the parent's as data (pure).

The parent's file is read as TOML (a table of plain values) and changed only where the
arm differs: its stages (the ones it trains, with its timesteps), each stage's flags
(`--seed`, and the step checkpoints the measure along the way reads), and for an arm of
one stage no retries (the budget is spent once; the gate still judges it). Everything
else (env, trainer, gate, launcher, tracking) stays the parent's, so an arm trains
exactly as that stage would in the curriculum.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from cosmic_curriculum.compare.arms import ArmPlan

BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
HEADER = (
    "# Derived by `cosmic-curriculum compare` from the workspace's stages.toml: arm {arm}, "
    "seed {seed}.\n# Do not edit: compare refuses an arm whose file differs from what it "
    "derives.\n"
)


def arm_table(
    parent: dict[str, Any], plan: ArmPlan, seed: int, every: int, keep: int
) -> dict[str, Any]:
    """The arm's stages.toml as data."""
    table = {k: v for k, v in parent.items() if k != "stages"}
    stages = []
    for index, steps in zip(plan.stages, plan.timesteps, strict=True):
        stage = dict(parent["stages"][index])
        stage["timesteps"] = steps
        stage["flags"] = [
            *stage.get("flags", []),
            *("--seed", str(seed)),
            *("--checkpoint-every", str(every)),
            *("--keep-checkpoints", str(keep)),
        ]
        stages.append(stage)
    table["stages"] = stages
    if plan.single:
        # Alone, the stage plays the curriculum's first reference unless it names its own
        # (the previous stage's bot does not exist here); one attempt spends the budget.
        table["max_retries"] = 0
    return table


def toml_text(table: dict[str, Any]) -> str:
    """``table`` as TOML: top-level values, then each table, then arrays of tables."""
    plain = {k: v for k, v in table.items() if not _is_table(v) and not _is_table_array(v)}
    lines = [f"{_key(k)} = {_value(v)}" for k, v in plain.items()]
    for key, value in table.items():
        if _is_table(value):
            lines += ["", f"[{_key(key)}]", *(f"{_key(k)} = {_value(v)}" for k, v in value.items())]
    for key, value in table.items():
        if _is_table_array(value):
            for item in value:
                lines += ["", f"[[{_key(key)}]]"]
                lines += [f"{_key(k)} = {_value(v)}" for k, v in item.items()]
    return "\n".join(lines) + "\n"


def _is_table(value: Any) -> bool:
    return isinstance(value, dict)


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _key(key: str) -> str:
    return key if BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        # JSON's escapes are TOML's, but for DEL, which TOML wants escaped too.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise ValueError(
        f"stages.toml: a value of type {type(value).__name__} cannot be copied into an arm"
    )
