"""An env bot's ONNX twin: its greedy action as an ONNX graph, and playing one back.

The graph is :class:`EnvBot`'s deterministic forward pass written out node by node
(opset 17, IR 8, as the arena's twins), float32 throughout:

- inputs: ``obs`` (a Box observation, float32 ``[batch, *shape]``; a Discrete one, int64
  ``[batch]``, one-hot in the graph), or for a Dict observation one input ``obs.<key>``
  per key in the bot's order;
- ``obs_norm`` (``Sub``, ``Div``, ``Clip``), ``scale`` (of images); an image policy's
  ``conv`` (or a Dict image key's branch) as ``Reshape`` to (C, H, W), per layer ``Conv``
  (+ ``Relu``), ``Flatten`` (then the branch's layers); a ``channels_last`` board first
  as ``Reshape`` to (H, W, C) and ``Transpose`` to (C, H, W); per layer
  ``MatMul`` + ``Add`` (+ ``Tanh``/``Relu``);
- output ``action``: a Discrete action int64 ``[batch]`` (``ArgMax`` + start), a Box one
  float32 ``[batch, *shape]`` (``squash``: ``Tanh`` then rescaled, else bounded by ``Max``
  and ``Min``).

``metadata_props`` hold the env spec, both spaces and the sha256 of the bot JSON the
twin was written from: :func:`load_env_twin` refuses a twin whose JSON has changed since
(a stale twin), so it is never played in place of the bot it no longer is. ``onnx`` and
``onnxruntime`` are imported inside the functions that need them.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.envs.conv import ConvLayer
from cosmic_curriculum.envs.layers import Layer
from cosmic_curriculum.envs.policy import EnvBot, is_env_bot_file, load_env_bot
from cosmic_curriculum.envs.spaces import Space, batch_size, channels_first, parse_space
from cosmic_curriculum.errors import BotError
from cosmic_curriculum.system.fsio import atomic_write_bytes
from cosmic_curriculum.workspace.env_config import EnvSpec

TWIN_FORMAT = "cosmic-curriculum-onnx-env-bot"
OPSET = 17  # the arena's twins' opset and IR version: loadable by older runtimes
IR_VERSION = 8
OUTPUT = "action"


def input_names(space: Space) -> list[str]:
    """The graph's inputs: ``obs``, or ``obs.<key>`` per key of a Dict observation."""
    return [f"obs.{key}" for key, _ in space.parts] if space.kind == "Dict" else ["obs"]


def _sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise BotError(f"{path}: cannot read bot file: {exc.strerror}") from None


class _Graph:
    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list[Any] = []
        self.inits: list[Any] = []

    def const(self, name: str, value: Any, dtype: Any = np.float32) -> str:
        self.inits.append(self.numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def node(self, op: str, inputs: list[str], out: str, **attrs: Any) -> str:
        self.nodes.append(self.helper.make_node(op, inputs, [out], name=out, **attrs))
        return out


def _features(g: _Graph, bot: EnvBot) -> tuple[str, list[Any]]:
    """The network's input tensor name, and the graph's input declarations."""
    from onnx import TensorProto, helper

    space, norm = bot.observation_space, bot.obs_norm
    parts = list(space.parts) if space.kind == "Dict" else [(None, space)]
    pieces: list[str] = []
    inputs: list[Any] = []
    branches = {b.key: b for b in bot.branches}
    for (key, part), name in zip(parts, input_names(space), strict=True):
        tag = "obs" if key is None else f"obs_{len(pieces)}"
        if part.kind == "Discrete":
            inputs.append(helper.make_tensor_value_info(name, TensorProto.INT64, ["batch"]))
            depth, values = (
                g.const(f"{tag}_depth", [part.n], np.int64),
                g.const(f"{tag}_01", [0, 1]),
            )
            pieces.append(g.node("OneHot", [name, depth, values], f"{tag}_onehot", axis=-1))
            continue
        shape: list[str | int] = ["batch", *part.shape]
        inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
        x = g.node("Flatten", [name], f"{tag}_flat", axis=1)
        stats = None
        if norm is not None:
            stats = norm.stats if key is None else (norm.keys or {}).get(key)
        if norm is not None and stats is not None:
            x = g.node("Sub", [x, g.const(f"{tag}_mean", stats.mean)], f"{tag}_centred")
            std = np.sqrt(stats.var + norm.epsilon)
            x = g.node("Div", [x, g.const(f"{tag}_std", std)], f"{tag}_scaled")
            lo, hi = g.const(f"{tag}_lo", -norm.clip_obs), g.const(f"{tag}_hi", norm.clip_obs)
            x = g.node("Clip", [x, lo, hi], f"{tag}_normalised")
        branch = branches.get(key) if key is not None else None
        if bot.scale != 1.0 and (key is None or branch is not None):  # images only
            x = g.node("Mul", [x, g.const(f"{tag}_scale", bot.scale)], f"{tag}_times_scale")
        if branch is not None:
            x = _dense(g, _conv(g, x, part.shape, branch.conv, f"{tag}_"), branch.layers, f"{tag}_")
        pieces.append(x)
    if len(pieces) == 1:
        return pieces[0], inputs
    return g.node("Concat", pieces, "features", axis=1), inputs


def _conv(g: _Graph, x: str, shape: tuple[int, ...], conv: tuple[ConvLayer, ...], tag: str) -> str:
    """Flattened pixels back to ``[batch, C, H, W]``, through ``conv``, flattened."""
    x = g.node("Reshape", [x, g.const(f"{tag}image_shape", [-1, *shape], np.int64)], f"{tag}image")
    for i, layer in enumerate(conv):
        (ph, pw), name = layer.padding, f"{tag}conv{i}"
        weights, bias = (
            g.const(f"{name}_weights", layer.weights),
            g.const(f"{name}_bias", layer.bias),
        )
        x = g.node(
            "Conv", [x, weights, bias], name, strides=list(layer.stride), pads=[ph, pw, ph, pw]
        )
        if layer.activation == "relu":
            x = g.node("Relu", [x], f"{name}_relu")
    return g.node("Flatten", [x], f"{tag}conv_flat", axis=1)


def _dense(g: _Graph, x: str, layers: tuple[Layer, ...], tag: str) -> str:
    for i, layer in enumerate(layers):
        name = f"{tag}layer{i}"
        x = g.node("MatMul", [x, g.const(f"{name}_weights_t", layer.weights.T)], f"{name}_mm")
        x = g.node("Add", [x, g.const(f"{name}_bias", layer.bias)], f"{name}_linear")
        if layer.activation != "linear":
            op = {"tanh": "Tanh", "relu": "Relu"}[layer.activation]
            x = g.node(op, [x], f"{name}_{layer.activation}")
    return x


def build_twin(bot: EnvBot, metadata: dict[str, str]) -> Any:
    """The ONNX model computing ``bot.act(obs, deterministic=True)`` in float32."""
    import onnx
    from onnx import TensorProto, helper

    g = _Graph()
    x, inputs = _features(g, bot)
    if bot.conv and bot.channels_last:
        rows, columns, planes = bot.observation_space.shape
        dims = g.const("board_shape", [-1, rows, columns, planes], np.int64)
        x = g.node("Reshape", [x, dims], "board")
        x = g.node("Transpose", [x], "board_planes_first", perm=[0, 3, 1, 2])
        x = _conv(g, x, (planes, rows, columns), bot.conv, "")
    elif bot.conv:
        x = _conv(g, x, bot.observation_space.shape, bot.conv, "")
    x = _dense(g, x, bot.layers, "")
    space = bot.action_space
    if space.kind == "Discrete":
        x = g.node("ArgMax", [x], "argmax" if space.start else OUTPUT, axis=1, keepdims=0)
        if space.start:
            g.node("Add", [x, g.const("action_start", space.start, np.int64)], OUTPUT)
        output = helper.make_tensor_value_info(OUTPUT, TensorProto.INT64, ["batch"])
    else:
        assert space.low is not None and space.high is not None
        if bot.squash:
            half = 0.5 * (space.high - space.low)
            x = g.node("Tanh", [x], "squashed")
            x = g.node("Mul", [x, g.const("action_half_range", half)], "action_scaled")
            x = g.node("Add", [x, g.const("action_mid", space.low + half)], "action_flat")
        else:
            x = g.node("Max", [x, g.const("action_low", space.low)], "action_above_low")
            x = g.node("Min", [x, g.const("action_high", space.high)], "action_flat")
        dims = g.const("action_shape", [-1, *space.shape], np.int64)
        g.node("Reshape", [x, dims], OUTPUT)
        output = helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", *space.shape])
    graph = helper.make_graph(g.nodes, "cosmic_curriculum_env_bot", inputs, [output], g.inits)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="cosmic-curriculum",
        doc_string="an env bot's greedy action; see metadata_props and docs/BOT_FORMAT.md",
    )
    model.ir_version = IR_VERSION
    helper.set_model_props(model, metadata)
    onnx.checker.check_model(model, full_check=True)
    return model


def write_env_twin(
    json_path: Path,
    out: Path | None = None,
    write: Callable[[Path, bytes], None] = atomic_write_bytes,
) -> Path:
    """The ONNX twin of the env bot in ``json_path`` (default: same stem, ``.onnx``),
    written by ``write`` (`export-onnx` gives its output's writer)."""
    json_path = Path(json_path)
    out = json_path.with_suffix(".onnx") if out is None else Path(out)
    if out.suffix.lower() != ".onnx":
        raise BotError(f"--out {out}: name the ONNX file with a .onnx suffix")
    bot = load_env_bot(json_path)
    if bot.action_mask:
        raise BotError(
            f"{json_path}: a masked bot (a game's legal moves) has no ONNX twin: the twin "
            "would play illegal moves; play the JSON bot"
        )
    metadata = {
        "format": TWIN_FORMAT,
        "version": "1",
        "env": json.dumps(bot.env.model_dump(mode="json"), sort_keys=True),
        "observation_space": json.dumps(bot.observation_space.to_json()),
        "action_space": json.dumps(bot.action_space.to_json()),
        "inputs": ",".join(input_names(bot.observation_space)),
        "provenance": json.dumps(bot.provenance or {}, sort_keys=True, default=str),
        "source": json_path.name,
        "source_sha256": _sha256(json_path),
    }
    write(out, build_twin(bot, metadata).SerializeToString())
    return out


def write_twin_or_warn(json_path: Path) -> None:
    """A trainer's twin next to the bot it just wrote. The JSON is what the curriculum
    plays, so a failed conversion is a warning, and a twin of an earlier bot is removed
    rather than left disagreeing with it (as the arena's trainer does)."""
    out = Path(json_path).with_suffix(".onnx")
    try:
        write_env_twin(json_path, out)
    except Exception as exc:
        out.unlink(missing_ok=True)
        sys.stderr.write(f"warning: could not write {out.name}: {exc}\n")


class EnvTwin:
    """An env bot's ONNX twin as a player: greedy whatever ``deterministic`` says."""

    def __init__(self, session: Any, env: EnvSpec, obs: Space, action: Space) -> None:
        self.session = session
        self.env, self.observation_space, self.action_space = env, obs, action
        self.names = input_names(obs)

    def act(
        self, obs: Any, deterministic: bool = True, rng: Any = None, mask: Any = None
    ) -> NDArray[Any]:
        """Greedy actions; ``mask`` is ignored (only unmasked bots have a twin)."""
        space = self.observation_space
        parts = [obs[key] for key, _ in space.parts] if space.kind == "Dict" else [obs]
        kinds = [s for _, s in space.parts] if space.kind == "Dict" else [space]
        feed: dict[str, NDArray[Any]] = {}
        for name, part, sub in zip(self.names, parts, kinds, strict=True):
            if sub.kind == "Discrete":
                feed[name] = np.asarray(part, dtype=np.int64).reshape(-1)
            else:
                array = channels_first(np.asarray(part, dtype=np.float32), sub)
                feed[name] = array.reshape(-1, *sub.shape)
        if batch_size(obs) == 0:
            return np.zeros((0,))
        (action,) = self.session.run([OUTPUT], feed)
        return np.asarray(action)


def load_env_twin(path: Path) -> EnvTwin:
    """An env bot's ONNX twin; refused in one line when not one, or when stale (its bot
    JSON next to it changed after the twin was written)."""
    path = Path(path)
    if not path.is_file():
        raise BotError(f"{path}: ONNX env bot file not found")
    try:
        import onnxruntime as ort
    except ImportError:
        raise BotError(f"{path}: playing ONNX bots needs onnxruntime: pip install -e .") from None
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own, unexported exception types
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BotError(f"{path}: not a loadable ONNX model ({detail})") from None
    meta = dict(session.get_modelmeta().custom_metadata_map)
    if meta.get("format") != TWIN_FORMAT:
        raise BotError(f"{path}: metadata format is {meta.get('format')!r}, not {TWIN_FORMAT!r}")
    source = path.parent / meta.get("source", "")
    fresh = not is_env_bot_file(source) or _sha256(source) == meta.get("source_sha256")
    if meta.get("source") and not fresh:
        raise BotError(
            f"{path} is stale: {source} changed after the twin was written; rewrite it "
            f"with `cosmic-curriculum export-onnx {source}`"
        )
    try:
        env = EnvSpec.model_validate(json.loads(meta["env"]))
        obs = parse_space(
            json.loads(meta["observation_space"]), "observation_space", allow_dict=True
        )
        action = parse_space(json.loads(meta["action_space"]), "action_space")
    except (KeyError, ValueError) as exc:
        raise BotError(f"{path}: metadata env or spaces unreadable ({exc})") from None
    return EnvTwin(session, env, obs, action)


def load_env_player(path: Path) -> EnvBot | EnvTwin:
    """An env bot file, or an env bot's ONNX twin (``.onnx``; refused when stale)."""
    return load_env_twin(path) if Path(path).suffix.lower() == ".onnx" else load_env_bot(path)
