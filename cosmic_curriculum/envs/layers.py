"""An env bot's dense layers: ``act(x @ W.T + b)``, their JSON and parsing. numpy only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cosmic_curriculum.envs.spaces import FloatArray, is_number

ACTIVATIONS = ("linear", "tanh", "relu")


@dataclass(frozen=True)
class Layer:
    weights: FloatArray  # (out, in)
    bias: FloatArray  # (out,)
    activation: str


def activate(x: FloatArray, activation: str) -> FloatArray:
    if activation == "tanh":
        return np.tanh(x)
    if activation == "relu":
        return np.maximum(x, 0.0)
    return x


def dense(layers: tuple[Layer, ...], x: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``x`` through ``layers``: the last layer's input and its output."""
    hidden = x
    for layer in layers:
        hidden = x
        x = activate(x @ layer.weights.T + layer.bias, layer.activation)
    return hidden, x


def layers_json(layers: tuple[Layer, ...]) -> list[dict[str, Any]]:
    return [
        {
            "weights": layer.weights.tolist(),
            "bias": layer.bias.tolist(),
            "activation": layer.activation,
        }
        for layer in layers
    ]


_PLAIN_NUMBERS = {int, float}


def vector(value: Any, field: str) -> FloatArray:
    fault = ValueError(f"{field} must be a list of finite numbers")
    if not isinstance(value, list):
        raise fault
    # map(type, ...) and set() iterate in C: a bot's layers hold 10^5-10^6 numbers, and
    # a Python check of each cost most of loading it. Anything else: checked one by one.
    if not set(map(type, value)) <= _PLAIN_NUMBERS and not all(is_number(v) for v in value):
        raise fault
    out = np.array(value, dtype=np.float64)
    if not np.isfinite(out).all():
        raise fault
    return out


def parse_layers(
    value: Any,
    inputs: int,
    outputs: int | None,
    field: str = "policy.layers",
    what: str = "the action space",
) -> tuple[Layer, ...]:
    if not isinstance(value, list) or not value:
        raise ValueError(f"{field} must be a non-empty list")
    layers = []
    width = inputs
    where = field
    for i, raw in enumerate(value):
        field = f"{where}[{i}]"
        if not isinstance(raw, dict):
            raise ValueError(f"{field} must be an object with weights, bias and activation")
        rows = raw.get("weights")
        if not isinstance(rows, list) or not rows or not all(isinstance(r, list) for r in rows):
            raise ValueError(f"{field}.weights must be a list of rows")
        lengths = sorted({len(r) for r in rows})
        if lengths != [width]:
            raise ValueError(f"{field}.weights rows must have {width} values, got {lengths}")
        weights = np.array([vector(r, f"{field}.weights") for r in rows])
        bias = vector(raw.get("bias"), f"{field}.bias")
        if bias.shape != (weights.shape[0],):
            raise ValueError(f"{field}.bias must have {weights.shape[0]} values")
        activation = raw.get("activation")
        if activation not in ACTIVATIONS:
            raise ValueError(f"{field}.activation is {activation!r}, expected one of {ACTIVATIONS}")
        layers.append(Layer(weights, bias, activation))
        width = weights.shape[0]
    if outputs is not None and width != outputs:
        raise ValueError(f"{where}: the last layer gives {width} outputs; {what} needs {outputs}")
    return tuple(layers)
