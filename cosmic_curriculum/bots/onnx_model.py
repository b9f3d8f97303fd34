"""MLP bots as ONNX models: build one from a bot JSON file, and play one with onnxruntime.

The graph is the numpy ``MlpBot`` written out node by node, from the very float32 arrays
``MlpBot`` computes with: ``obs`` float32 ``[batch, OBS_SIZE]`` → (``Sub`` mean, ``Div``
std, ``Clip`` ±10 when the file normalises) → per layer ``MatMul`` + ``Add`` (+ ``Tanh``
or ``Relu``) → ``Clip`` [-1, 1] → ``action`` float32 ``[batch, ACT_SIZE]``. The model's
``metadata_props`` carry what a game needs beside the weights (:data:`METADATA_KEYS`).

Only imported when a command meets an ``.onnx`` file or writes one: ``onnx`` (to build)
and ``onnxruntime`` (to run) are imported inside the functions that need them.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from pydantic import ValidationError

from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.policy import F32, check_decision_ticks
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.bots.actions import action_fault
from cosmic_curriculum.bots.format import bot_from_document, bot_sha256, read_document
from cosmic_curriculum.bots.mlp import OBS_CLIP, MlpBot
from cosmic_curriculum.bots.schema import fault, validate_document
from cosmic_curriculum.defaults import ONNX_PROBE_SECONDS
from cosmic_curriculum.errors import BotError
from cosmic_curriculum.system import fsio
from cosmic_curriculum.system.python import python_argv
from cosmic_curriculum.system.terminal import printable

if TYPE_CHECKING:
    from onnx import ModelProto

INPUT = "obs"
OUTPUT = "action"
OPSET = 17
# Opset 17 needs IR version 8; writing no newer one keeps the file loadable by older
# runtimes (a game may embed an onnxruntime a few releases behind ours).
IR_VERSION = 8
ONNX_FORMAT = "cosmic-curriculum-onnx-bot"
ACTION_NAMES = ("thrust", "strafe", "lift", "yaw", "pitch", "roll")
METADATA_KEYS = (
    "format",  # ONNX_FORMAT
    "version",  # "1"
    "observation_size",
    "action_size",
    "action_names",  # comma-separated, in output order
    "decision_ticks",  # physics ticks per decision
    "seconds_per_decision",  # decision_ticks x game tick
    "game",  # JSON: the GameSettings the bot was trained for
    "provenance",  # JSON: the bot file's provenance
    "partial",  # "true" when exported from an interrupted training
    "source",  # file name of the bot JSON
    "source_sha256",  # sha256 of the bot JSON's bytes
)
REQUIRED_TO_PLAY = ("decision_ticks", "game")
# Before a model is trusted with a match, a child process loads it and plays one batch of
# this many games within these bounds: a graph fixed to another batch size, a node that
# allocates without end or never returns is refused up front, and cannot take this
# process's memory or time with it.
PROBE_GAMES = 4
PROBE_SECONDS = ONNX_PROBE_SECONDS
PROBE_ADDRESS_SPACE_BYTES = 2 << 30
PROBE_ERROR_CHARS = 300
_PROBE = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[2]), int(sys.argv[2])))
import numpy as np
import onnxruntime as ort
ort.set_default_logger_severity(3)
options = ort.SessionOptions()
options.intra_op_num_threads = options.inter_op_num_threads = 1
options.log_severity_level = 3

def said(exc, code):
    sys.stdout.write(" ".join(str(exc).split()) or type(exc).__name__)
    sys.exit(code)

try:
    session = ort.InferenceSession(sys.argv[1], options, providers=["CPUExecutionProvider"])
except BaseException as exc:
    said(exc, 3)
inputs = session.get_inputs()
shape = list(inputs[0].shape or []) if len(inputs) == 1 else []
if len(shape) == 2 and not isinstance(shape[0], int) and shape[1] == int(sys.argv[4]):
    try:  # the parent names what else is wrong with the inputs
        session.run(None, {inputs[0].name: np.zeros((int(sys.argv[3]), shape[1]), np.float32)})
    except BaseException as exc:
        said(exc, 4)
"""


def onnx_path_for(json_path: Path) -> Path:
    """Where a bot JSON's ONNX twin goes by default: same directory, same stem."""
    return Path(json_path).with_suffix(".onnx")


def _import_onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise BotError(
            "writing ONNX bots needs the onnx package: pip install -e . (or pip install onnx)"
        ) from None
    return onnx


def build_model(bot: MlpBot, metadata: dict[str, str]) -> ModelProto:
    """The ONNX model computing exactly ``bot.act`` (deterministic, batched)."""
    onnx = _import_onnx()
    from onnx import TensorProto, helper, numpy_helper

    nodes: list[Any] = []
    inits: list[Any] = []

    def const(name: str, value: NDArray[Any] | float) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=np.float32), name))
        return name

    def node(op: str, inputs: list[str], out: str) -> str:
        nodes.append(helper.make_node(op, inputs, [out], name=out))
        return out

    x = INPUT
    if bot.obs_mean is not None:
        x = node("Sub", [x, const("obs_mean", bot.obs_mean)], "obs_centred")
    if bot.obs_std is not None:
        x = node("Div", [x, const("obs_std", bot.obs_std)], "obs_scaled")
    if bot.obs_mean is not None or bot.obs_std is not None:
        lo, hi = const("obs_clip_lo", -OBS_CLIP), const("obs_clip_hi", OBS_CLIP)
        x = node("Clip", [x, lo, hi], "obs_normalised")
    for i, (wt, b, activation) in enumerate(bot.layers):
        x = node("MatMul", [x, const(f"layer{i}_weights_t", wt)], f"layer{i}_matmul")
        x = node("Add", [x, const(f"layer{i}_bias", b)], f"layer{i}_linear")
        if activation != "linear":
            op = {"tanh": "Tanh", "relu": "Relu"}[activation]
            x = node(op, [x], f"layer{i}_{activation}")
    node("Clip", [x, const("action_lo", -1.0), const("action_hi", 1.0)], OUTPUT)

    graph = helper.make_graph(
        nodes,
        "cosmic_curriculum_mlp_bot",
        [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, ["batch", OBS_SIZE])],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", ACT_SIZE])],
        initializer=inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="cosmic-curriculum",
        doc_string="obs float32 [batch, 43] -> action float32 [batch, 6] in [-1, 1]; "
        "see metadata_props and docs/BOT_FORMAT.md",
    )
    model.ir_version = IR_VERSION
    helper.set_model_props(model, metadata)
    onnx.checker.check_model(model, full_check=True)
    return model


def write_onnx(
    json_path: str | Path,
    out: str | Path | None = None,
    write: Callable[[Path, bytes], None] = fsio.atomic_write_bytes,
) -> Path:
    """Convert an MLP bot file to ONNX (default ``<same stem>.onnx``); returns the path.
    ``write`` writes the model (`export-onnx` gives its output's writer)."""
    json_path = Path(json_path)
    out = onnx_path_for(json_path) if out is None else Path(out)
    if out.suffix.lower() != ".onnx":
        raise BotError(f"--out {out}: name the ONNX file with a .onnx suffix")
    doc = read_document(json_path)
    valid = validate_document(doc, str(json_path))
    if valid.kind != "mlp":
        raise BotError(
            f"{json_path}: {'an' if valid.kind[:1] in 'aeiou' else 'a'} {valid.kind} bot "
            "has no network to convert; only mlp bots "
            "export to ONNX"
        )
    bot = bot_from_document(doc, str(json_path))
    assert isinstance(bot, MlpBot)  # kind "mlp" builds an MlpBot
    game = valid.game
    metadata = {
        "format": ONNX_FORMAT,
        "version": "1",
        "observation_size": str(OBS_SIZE),
        "action_size": str(ACT_SIZE),
        "action_names": ",".join(ACTION_NAMES),
        "decision_ticks": str(valid.decision_ticks),
        "seconds_per_decision": repr(valid.decision_ticks * game.tick),
        "game": json.dumps(game.model_dump(), sort_keys=True),
        "provenance": json.dumps(valid.provenance, sort_keys=True, default=str),
        "partial": "true" if valid.partial else "false",
        "source": json_path.name,
        "source_sha256": bot_sha256(json_path),
    }
    model = build_model(bot, metadata)
    write(out, model.SerializeToString())
    return out


class OnnxBot:
    """A bot played by onnxruntime: one ``session.run`` per decision for the whole batch."""

    kind = "onnx"

    def __init__(
        self,
        session: Any,
        decision_ticks: int,
        game: GameSettings,
        metadata: dict[str, str],
        source: str,
    ) -> None:
        self.session = session
        self.decision_ticks = check_decision_ticks(decision_ticks)
        self.game = game
        self.metadata = metadata
        self.source = source
        self.input_name = session.get_inputs()[0].name
        self.output_name = session.get_outputs()[0].name
        self.decisions = 0

    def act(self, obs: F32, rng: np.random.Generator) -> F32:
        x = np.ascontiguousarray(obs, dtype=np.float32)
        n = int(x.shape[0])
        if n == 0:
            return np.zeros((0, ACT_SIZE), dtype=np.float32)
        self.decisions += 1
        during = f"in decision {self.decisions} (a batch of {n} games)"
        try:
            (action,) = self.session.run([self.output_name], {self.input_name: x})
        except Exception as exc:  # onnxruntime raises its own, unexported exception types
            raise BotError(f"bot {self.source}: the model failed {during}: {_said(exc)}") from None
        # The same check as a program's answer: a NaN or 1e30 is a fault, not a move.
        fault = action_fault(action, n)
        if fault is not None:
            raise BotError(f"bot {self.source}: {fault} {during}")
        return np.asarray(action, dtype=np.float32)

    def reset(self, mask: NDArray[np.bool_]) -> None:
        return None


def _said(exc: BaseException, limit: int = PROBE_ERROR_CHARS) -> str:
    """onnxruntime's message as one printable line of at most ``limit`` characters."""
    text = printable(" ".join(str(exc).split()), keep_newlines=False) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_io(path: Path, what: str, args: list[Any], size: int) -> None:
    if len(args) != 1:
        raise BotError(f"{path}: the model has {len(args)} {what}s, a bot has exactly one")
    arg = args[0]
    shape = list(arg.shape or [])
    if arg.type != "tensor(float)" or len(shape) != 2 or shape[1] != size:
        raise BotError(
            f"{path}: {what} {arg.name!r} is {arg.type} {shape}, expected float32 [batch, {size}]"
        )
    if isinstance(shape[0], int):  # a match plays thousands of games in one batch
        raise BotError(
            f"{path}: {what} {arg.name!r} has a fixed batch of {shape[0]}, a bot plays any "
            "number of games at once; export it with a dynamic batch axis (torch.onnx.export("
            "..., dynamic_axes={'obs': {0: 'batch'}, 'action': {0: 'batch'}}))"
        )


def probe_onnx(path: Path) -> None:
    """Load ``path`` and play one batch of :data:`PROBE_GAMES` games in a child process
    bounded in address space and time; ``BotError`` when the model cannot."""
    argv = python_argv("-c", _PROBE, str(path), str(PROBE_ADDRESS_SPACE_BYTES))
    argv += [str(PROBE_GAMES), str(OBS_SIZE)]
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=PROBE_SECONDS, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        raise BotError(
            f"{path}: the model did not play a batch of {PROBE_GAMES} games within "
            f"{PROBE_SECONDS:g} s; a bot answers a decision in milliseconds"
        ) from None
    if done.returncode == 0:
        return
    said = printable(" ".join(done.stdout.decode("utf-8", "replace").split()), False)
    if done.returncode not in (3, 4) or not said:
        said = f"the process running it ended with status {done.returncode}"
    if len(said) > PROBE_ERROR_CHARS:
        said = said[: PROBE_ERROR_CHARS - 3] + "..."
    limit = PROBE_ADDRESS_SPACE_BYTES >> 30
    if done.returncode == 3:
        raise BotError(f"{path}: not a loadable ONNX model within {limit} GiB ({said})")
    raise BotError(
        f"{path}: the model cannot play a batch of {PROBE_GAMES} games within {limit} GiB "
        f"({said}); fix or re-export the model"
    )


def load_onnx_bot(path: str | Path) -> OnnxBot:
    """An ONNX bot file as an :class:`OnnxBot`; ``BotError`` names file and fault."""
    path = Path(path)
    if not path.exists():
        raise BotError(f"{path}: bot file not found")
    if not path.is_file():  # onnxruntime would read a FIFO forever
        raise BotError(f"{path}: not a regular file, expected an ONNX bot file")
    try:
        import onnxruntime as ort
    except ImportError:
        raise BotError(
            f"{path}: playing ONNX bots needs onnxruntime: pip install -e . "
            "(or pip install onnxruntime)"
        ) from None
    # Loading may fold constants and playing may allocate: both first in a bounded child.
    probe_onnx(path)
    options = ort.SessionOptions()
    # Matches run many small batches next to a trainer: one thread is faster and fairer.
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime raises its own, unexported exception types
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BotError(f"{path}: not a loadable ONNX model ({detail})") from None
    _check_io(path, "input", session.get_inputs(), OBS_SIZE)
    _check_io(path, "output", session.get_outputs(), ACT_SIZE)
    metadata = dict(session.get_modelmeta().custom_metadata_map)
    missing = [key for key in REQUIRED_TO_PLAY if key not in metadata]
    if missing:
        raise BotError(
            f"{path}: metadata_props lack {', '.join(missing)} (convert the bot JSON with "
            "`cosmic-curriculum export-onnx`)"
        )
    try:
        ticks = check_decision_ticks(int(metadata["decision_ticks"]))
    except ValueError:
        raise BotError(
            f"{path}: metadata decision_ticks {metadata['decision_ticks']!r} is not an integer >= 1"
        ) from None
    try:
        game = GameSettings.model_validate(fsio.loads(metadata["game"]))
    except ValidationError as exc:
        raise BotError(f"{path}: metadata game: {fault(exc)}") from None
    except ValueError as exc:
        raise BotError(f"{path}: metadata game is not JSON ({exc})") from None
    bot = OnnxBot(session, ticks, game, metadata, str(path))
    _play_kickoffs(bot)
    return bot


def _play_kickoffs(bot: OnnxBot) -> None:
    """One decision on real kickoff observations: a model that answers NaN or values
    outside [-1, 1] there is refused before any match."""
    from cosmic_curriculum.arena.observations import observe
    from cosmic_curriculum.arena.rules import kickoff_jitter, new_state

    rng = np.random.default_rng(0)
    jitter = kickoff_jitter(PROBE_GAMES, bot.game, rng)
    obs = observe(new_state(PROBE_GAMES, bot.game, rng, jitter=jitter), bot.game)
    bot.act(obs.reshape(-1, OBS_SIZE), rng)  # BotError names the file and the fault
    bot.decisions = 0
