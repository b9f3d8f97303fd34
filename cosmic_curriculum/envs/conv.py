"""Convolution layers of an env bot: SB3's NatureCNN (or any features extractor of the
same form) in numpy.

An image policy's features extractor is ``cnn`` (Conv2d, each followed by at most one
ReLU, then Flatten) and ``linear`` (Linear + ReLU). The convolutions become the bot's
``conv`` layers, applied to the channel-first image SB3's ``preprocess_obs`` gives (/255
when it normalises images); what follows the Flatten joins the bot's linear ``layers``.
A convolution is ``act(sum over (c, i, j) of W[o, c, i, j] * x[c, s*y + i, s*x + j] + b[o])``
on the zero-padded image: cross-correlation, as torch's Conv2d, with no dilation or groups.

torch is imported inside :func:`conv_of` only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from cosmic_curriculum.envs.layers import Layer, layers_json, parse_layers
from cosmic_curriculum.envs.spaces import FloatArray, Space, count, is_number
from cosmic_curriculum.errors import TrainerError

CONV_ACTIVATIONS = ("linear", "relu")
# Images per pass: the first layer's windows of a 56x56 image are ~260 KB in float64.
_CHUNK = 128


@dataclass(frozen=True)
class ConvLayer:
    weights: FloatArray  # (out channels, in channels, kernel height, kernel width)
    bias: FloatArray  # (out channels,)
    stride: tuple[int, int]
    padding: tuple[int, int]
    activation: str

    def out_shape(self, shape: tuple[int, ...]) -> tuple[int, int, int]:
        """The (C, H, W) this layer gives for an input of ``shape`` (C, H, W)."""
        (kh, kw), (sh, sw), (ph, pw) = self.weights.shape[2:], self.stride, self.padding
        return (
            int(self.weights.shape[0]),
            (shape[1] + 2 * ph - kh) // sh + 1,
            (shape[2] + 2 * pw - kw) // sw + 1,
        )

    def apply(self, x: FloatArray) -> FloatArray:
        """A batch ``(batch, C, H, W)`` through the convolution and its activation."""
        ph, pw = self.padding
        if ph or pw:
            x = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
        kh, kw = self.weights.shape[2:]
        sh, sw = self.stride
        # (batch, C, H', W', kh, kw) views, no copy; the stride picks every s-th window.
        windows = sliding_window_view(x, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw]
        out = np.tensordot(windows, self.weights, axes=([1, 4, 5], [1, 2, 3]))
        out = out.transpose(0, 3, 1, 2) + self.bias[None, :, None, None]
        return np.maximum(out, 0.0) if self.activation == "relu" else out

    def to_json(self) -> dict[str, Any]:
        return {
            "weights": self.weights.tolist(),
            "bias": self.bias.tolist(),
            "stride": list(self.stride),
            "padding": list(self.padding),
            "activation": self.activation,
        }


def conv_forward(conv: tuple[ConvLayer, ...], x: FloatArray) -> FloatArray:
    """A batch of channel-first images through ``conv``, flattened as torch's Flatten;
    in chunks, so a large batch's windows do not all sit in memory at once."""
    chunks = []
    for start in range(0, max(len(x), 1), _CHUNK):
        y = x[start : start + _CHUNK]
        for layer in conv:
            y = layer.apply(y)
        chunks.append(y.reshape(y.shape[0], -1))
    return np.concatenate(chunks)


def conv_output(conv: tuple[ConvLayer, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    for layer in conv:
        shape = layer.out_shape(shape)
    return shape


def parse_conv(
    value: Any, image: tuple[int, ...] | None, where: str = "policy.conv"
) -> tuple[ConvLayer, ...]:
    """``policy.conv`` from its JSON, checked against the (C, H, W) image it reads;
    ``ValueError`` names the field at fault."""
    if value is None or value == []:
        return ()
    if image is None or len(image) != 3:
        raise ValueError(f"{where} needs a 3-D (channels, height, width) Box observation")
    if not isinstance(value, list):
        raise ValueError(f"{where} must be a list of convolution layers")
    layers: list[ConvLayer] = []
    shape = image
    for i, raw in enumerate(value):
        field = f"{where}[{i}]"
        if not isinstance(raw, dict):
            raise ValueError(f"{field} must be an object with weights, bias, stride, padding")
        try:
            weights = np.array(raw.get("weights"), dtype=np.float64)
        except (TypeError, ValueError):
            weights = np.zeros(0)
        if weights.ndim != 4 or weights.shape[1] != shape[0] or not np.isfinite(weights).all():
            raise ValueError(
                f"{field}.weights must be finite numbers [out][{shape[0]}][kernel h][kernel w]"
            )
        bias = raw.get("bias")
        if not isinstance(bias, list) or len(bias) != weights.shape[0]:
            raise ValueError(f"{field}.bias must have {weights.shape[0]} values")
        if not all(is_number(b) for b in bias):
            raise ValueError(f"{field}.bias must be a list of finite numbers")
        stride, padding = (
            _pair(raw.get(k), f"{field}.{k}", m) for k, m in (("stride", 1), ("padding", 0))
        )
        activation = raw.get("activation")
        if activation not in CONV_ACTIVATIONS:
            raise ValueError(f"{field}.activation is {activation!r}, expected {CONV_ACTIVATIONS}")
        layer = ConvLayer(weights, np.array(bias, dtype=np.float64), stride, padding, activation)
        shape = layer.out_shape(shape)
        if min(shape[1:]) < 1:
            raise ValueError(f"{field} leaves no pixels of the {image} image (kernel too large)")
        layers.append(layer)
    return tuple(layers)


def _pair(value: Any, field: str, minimum: int) -> tuple[int, int]:
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError(f"{field} must be a list of two integers >= {minimum}, got {value!r}")
    first, second = (count(v, field, minimum) for v in value)
    return first, second


def conv_of(modules: list[Any], where: str) -> tuple[tuple[ConvLayer, ...], list[Any]]:
    """The Conv2d (+ ReLU) modules up to a Flatten as conv layers, and the modules after
    the Flatten (for the linear layers); anything else is a one-line TrainerError."""
    from torch import nn

    layers: list[ConvLayer] = []
    for i, module in enumerate(modules):
        if isinstance(module, nn.Flatten):
            if not layers or module.start_dim != 1 or module.end_dim != -1:
                break
            return tuple(layers), modules[i + 1 :]
        if isinstance(module, nn.Conv2d) and _plain(module):
            weights = module.weight.detach().cpu().double().numpy()
            bias = module.bias
            bias_values = (
                np.zeros(weights.shape[0]) if bias is None else bias.detach().cpu().double().numpy()
            )
            if not (np.isfinite(weights).all() and np.isfinite(bias_values).all()):
                raise TrainerError(
                    f"{where} has non-finite weights (training diverged); resume from an "
                    "earlier checkpoint with a lower learning rate"
                )
            stride = (int(module.stride[0]), int(module.stride[1]))
            padding = (int(module.padding[0]), int(module.padding[1]))
            layers.append(ConvLayer(weights, bias_values, stride, padding, "linear"))
            continue
        if type(module) is nn.ReLU and layers and layers[-1].activation == "linear":
            last = layers[-1]
            layers[-1] = ConvLayer(last.weights, last.bias, last.stride, last.padding, "relu")
            continue
        raise TrainerError(
            f"cannot export {where} features extractor module {i} ({type(module).__name__}): "
            "env bots hold Conv2d layers (zero padding, no dilation or groups), each followed "
            "by at most one ReLU, then Flatten and Linear layers"
        )
    raise TrainerError(
        f"cannot export {where} features extractor: its convolutions do not end in a Flatten "
        "of all but the batch dimension"
    )


def _plain(module: Any) -> bool:
    # What the numpy forward computes: zero padding of fixed size, no dilation, no groups.
    return (
        module.groups == 1
        and tuple(module.dilation) == (1, 1)
        and module.padding_mode == "zeros"
        and not isinstance(module.padding, str)
    )


@dataclass(frozen=True)
class Branch:
    """A Dict observation's image key through its own NatureCNN: convolutions, then the
    extractor's Linear layers; its output takes the key's place in the concatenation."""

    key: str
    conv: tuple[ConvLayer, ...]
    layers: tuple[Layer, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "conv": [c.to_json() for c in self.conv],
            "layers": layers_json(self.layers),
        }


def parse_branches(value: Any, obs_space: Space) -> tuple[Branch, ...]:
    if value is None or value == []:
        return ()
    parts = dict(obs_space.parts)
    if not isinstance(value, list) or obs_space.kind != "Dict":
        raise ValueError("policy.branches must be a list, for a Dict observation_space")
    branches: list[Branch] = []
    for i, raw in enumerate(value):
        field = f"policy.branches[{i}]"
        key = raw.get("key") if isinstance(raw, dict) else None
        if key not in parts or key in {b.key for b in branches}:
            raise ValueError(f"{field}.key must name a new key of observation_space, got {key!r}")
        image = parts[key].shape if parts[key].kind == "Box" else None
        conv = parse_conv(raw.get("conv"), image, f"{field}.conv")
        if not conv:
            raise ValueError(f"{field}.conv must list the key's convolutions")
        inputs = math.prod(conv_output(conv, parts[key].shape))
        layers = parse_layers(raw.get("layers"), inputs, None, f"{field}.layers")
        branches.append(Branch(key, conv, layers))
    return tuple(branches)
