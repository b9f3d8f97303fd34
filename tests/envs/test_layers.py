"""envs/layers.py's `vector`: a bot file's list of finite numbers, the fast check of plain
ints and floats and the one-by-one check of anything else agreeing on every input."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from cosmic_curriculum.envs.layers import vector


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([1, 2.5, -0.0], [1.0, 2.5, 0.0]),
        ([], []),
        ([np.float64(0.5), 3], [0.5, 3.0]),  # a float subclass: checked one by one
        ([10**30], [1e30]),
    ],
)
def test_finite_numbers_are_read(value: list[Any], expected: list[float]) -> None:
    out = vector(value, "policy.layers[0].bias")
    assert out.dtype == np.float64 and out.tolist() == expected


@pytest.mark.parametrize(
    "value",
    [
        [True, 1.0],  # a bool is not a number here, though numpy would read it as 1.0
        [1.0, "2"],
        [None],
        [[1.0]],
        [1.0, math.inf],
        [math.nan],
        [np.float64(math.inf)],
        [np.int64(3)],  # not a Python int
        (1.0, 2.0),  # not a list
        "1.0",
        None,
    ],
)
def test_anything_else_is_one_line_naming_the_field(value: Any) -> None:
    with pytest.raises(
        ValueError, match=r"^policy.layers\[0\].bias must be a list of finite numbers$"
    ):
        vector(value, "policy.layers[0].bias")
