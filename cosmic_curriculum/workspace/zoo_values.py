"""The values of a trainer's hyperparameters, pure: `[trainer] hyperparams` of
`stages.toml` and an rl-zoo3 hyperparameter entry, in one JSON form that `train-env`
receives as ``--hyperparams`` and turns into SB3 objects (``envs/algos.py``).

That form keeps what JSON cannot hold as marked strings: ``"lin_<x>"`` for a linear
schedule from x to 0 (the zoo's notation; `learning_rate`, `clip_range`, `clip_range_vf`,
`delta_std`), ``"nn.<Activation>"`` for a torch activation class in `policy_kwargs`, and
the zoo's ``noise_type``/``noise_std`` pair for an algorithm's action noise.

The zoo writes `policy_kwargs` and `normalize` as Python source ("dict(net_arch=[64],
activation_fn=nn.ReLU)"). :func:`literal` reads such text from its syntax tree and
accepts only ``dict(...)`` with keywords, ``{...}`` with string keys, lists, tuples,
numbers, strings, booleans, ``None`` and ``nn.<Activation>``: nothing is evaluated.
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass
from typing import Any

# Hyperparameters that take a schedule: "lin_<x>" there is SB3's progress-based linear
# schedule from x (at the start) to 0 (at the end of the budget).
SCHEDULE_KEYS = ("learning_rate", "clip_range", "clip_range_vf", "delta_std")
_SCHEDULE_RE = re.compile(r"^lin_(.*)$")
# torch.nn activations a policy may name (stateless modules, built with no arguments).
ACTIVATIONS = (
    "ReLU",
    "Tanh",
    "ELU",
    "GELU",
    "LeakyReLU",
    "SiLU",
    "Sigmoid",
    "Softplus",
    "SELU",
    "Mish",
    "Hardtanh",
    "Hardswish",
    "CELU",
)
# How the zoo names torch's nn module in its strings.
_NN_PREFIXES = ("nn", "th.nn", "torch.nn")
NOISE_TYPES = ("normal", "ornstein-uhlenbeck")
# The features extractor `policy_kwargs` may name (``envs/board_cnn.py``), and its
# keyword arguments' defaults: two 3x3 layers of 64 planes, then 256 features; the planes
# last (PettingZoo's boards) unless SB3 made the observation a channel-first image (None).
BOARD_CNN = "BoardCNN"
BOARD_CNN_DEFAULTS: dict[str, Any] = {
    "channels": (64, 64),
    "kernel": 3,
    "features": 256,
    "channels_last": None,
}
# A zoo string longer than this, or nested deeper, is refused before it is parsed.
MAX_LITERAL_CHARS = 4000
MAX_LITERAL_DEPTH = 12

# Keys of a hyperparameter table that are [trainer] settings or the curriculum's own.
RESERVED = {
    "policy": "set [trainer] policy instead",
    "n_envs": "set [trainer] n_envs instead",
    "normalize": "set [trainer] normalize instead",
    "env": "the env is the stage's [env]",
    "seed": "the seed is the attempt's (candidates get --seed k)",
    "n_timesteps": "the budget is the stage's timesteps",
    "total_timesteps": "the budget is the stage's timesteps",
    "_init_setup_model": "it is SB3's internal switch",
}
# Keys of an rl-zoo3 entry that train-env cannot honour, and what to do instead.
ZOO_REFUSED = {
    "env_wrapper": "put the wrapper in [env] wrappers",
    "frame_stack": (
        'add {call = "gymnasium.wrappers:FrameStackObservation", kwargs = {stack_size = N}} '
        "to [env] wrappers"
    ),
    "vec_env_wrapper": "train-env wraps only VecNormalize ([trainer] normalize); remove it",
    "callback": "train-env runs its own callbacks (checkpoints, progress); remove it",
    "env_kwargs": "put them in [env] kwargs",
    "eval_env_kwargs": "the evaluation plays the stage's [env]; remove it",
    "monitor_kwargs": "train-env records episodes itself; remove it",
    "replay_buffer_class": "only SB3's default replay buffer is supported (no HER); remove it",
    "model_class": "only SB3's default replay buffer is supported (no HER); remove it",
    "normalize_kwargs": 'write them as normalize = "dict(...)"',
}


def literal(text: str) -> Any:
    """The value of a zoo string such as ``"dict(net_arch=[64], activation_fn=nn.ReLU)"``
    (``nn.ReLU`` becomes ``"nn.ReLU"``); anything else is a ValueError saying what."""
    if len(text) > MAX_LITERAL_CHARS:
        raise ValueError(f"is longer than {MAX_LITERAL_CHARS} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ValueError(f"is not a Python literal ({type(exc).__name__})") from None
    return _value(tree.body, 0)


def _value(node: ast.AST, depth: int) -> Any:
    if depth > MAX_LITERAL_DEPTH:
        raise ValueError(f"nests deeper than {MAX_LITERAL_DEPTH} levels")
    if isinstance(node, ast.Constant) and isinstance(node.value, bool | int | float | str):
        return _finite(node.value)
    if isinstance(node, ast.Constant) and node.value is None:
        return None
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub | ast.UAdd)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) in (int, float)
    ):
        number = node.operand.value
        if isinstance(number, int | float):
            return _finite(-number if isinstance(node.op, ast.USub) else number)
    if isinstance(node, ast.List | ast.Tuple):
        return [_value(e, depth + 1) for e in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for key, item in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                raise ValueError("has a dict key that is not a string")
            out[key.value] = _value(item, depth + 1)
        return out
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        if node.args or any(k.arg is None for k in node.keywords):
            raise ValueError("calls dict() with other than keyword arguments")
        return {str(k.arg): _value(k.value, depth + 1) for k in node.keywords}
    name = _dotted(node)
    if name is not None:
        prefix, _, last = name.rpartition(".")
        if prefix in _NN_PREFIXES and last in ACTIVATIONS:
            return f"nn.{last}"
        raise ValueError(
            f"names {name!r}; only nn.<activation> ({', '.join(ACTIVATIONS)}) may be named"
        )
    raise ValueError(
        f"holds {ast.unparse(node)[:60]!r}; only dict(), lists, numbers, strings, booleans "
        "and nn.<activation> are read"
    )


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of plain names, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"holds the non-finite number {value}")
    return value


def schedule_start(value: str) -> float | None:
    """x of ``"lin_<x>"`` (None: not a schedule string); a bad x is a ValueError."""
    match = _SCHEDULE_RE.fullmatch(value)
    if match is None:
        return None
    try:
        start = float(match.group(1))
    except ValueError:
        raise ValueError(f"{value!r} is not lin_<number>, e.g. lin_3e-4") from None
    if not (math.isfinite(start) and start > 0):
        raise ValueError(f"{value!r}: a linear schedule starts at a positive number")
    return start


def check_hyperparams(params: dict[str, Any]) -> dict[str, Any]:
    """Refuse values train-env could not turn into SB3's (each fault names its key)."""
    for key, value in params.items():
        if key in RESERVED:
            raise ValueError(f"{key}: {RESERVED[key]}")
        if key in SCHEDULE_KEYS and isinstance(value, str):
            try:
                start = schedule_start(value)
            except ValueError as exc:
                raise ValueError(f"{key}: {exc}") from None
            if start is None:
                raise ValueError(f"{key}: {value!r} is neither a number nor lin_<number>")
        if key == "policy_kwargs":
            if not isinstance(value, dict):
                raise ValueError("policy_kwargs: must be a table, e.g. {net_arch = [64, 64]}")
            _check_activations(value, key)
            _check_extractor(value)
    noise = params.get("noise_type")
    if noise is not None and noise not in NOISE_TYPES:
        raise ValueError(f"noise_type: {noise!r} is not one of {', '.join(NOISE_TYPES)}")
    if (noise is None) != ("noise_std" not in params):
        raise ValueError("noise_type and noise_std: set both (the zoo's action noise) or neither")
    std = params.get("noise_std")
    if std is not None and not _numbers(std):
        raise ValueError(f"noise_std: {std!r} must be a number or a list of numbers")
    try:
        json.dumps(params, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"must hold only strings, numbers, booleans, lists and tables ({exc})"
        ) from None
    return params


def _numbers(value: Any) -> bool:
    items = value if isinstance(value, list) else [value]
    return bool(items) and all(type(v) in (int, float) for v in items)


def _check_activations(value: Any, where: str) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _check_activations(v, f"{where}.{k}")
    elif isinstance(value, list):
        for v in value:
            _check_activations(v, where)
    elif isinstance(value, str) and value.startswith("nn.") and value[3:] not in ACTIVATIONS:
        raise ValueError(f"{where}: {value!r} is not one of nn.{', nn.'.join(ACTIVATIONS)}")


def _check_extractor(kwargs: dict[str, Any]) -> None:
    # Without a class, features_extractor_kwargs are the policy's own extractor's (e.g.
    # NatureCNN's features_dim), which SB3 checks.
    where = "policy_kwargs.features_extractor_class"
    name = kwargs.get("features_extractor_class")
    options = kwargs.get("features_extractor_kwargs")
    if name is None:
        return
    if name != BOARD_CNN:
        raise ValueError(f"{where}: {name!r} is not {BOARD_CNN!r} (the one extractor named here)")
    where = "policy_kwargs.features_extractor_kwargs"
    if options is None:
        return
    if not isinstance(options, dict):
        raise ValueError(f"{where}: must be a table, e.g. {{channels = [64, 64]}}")
    for key, value in options.items():
        if key not in BOARD_CNN_DEFAULTS:
            raise ValueError(f"{where}.{key}: not one of {', '.join(BOARD_CNN_DEFAULTS)}")
        if key == "channels_last":
            if type(value) is not bool:
                raise ValueError(f"{where}.channels_last: {value!r} must be true or false")
            continue
        items = value if key == "channels" else [value]
        if (
            not isinstance(items, list)
            or not items
            or not all(type(v) is int and 1 <= v <= 4096 for v in items)
        ):
            shape = "a list of integers" if key == "channels" else "an integer"
            raise ValueError(f"{where}.{key}: {value!r} must be {shape} from 1 to 4096")


def normalize_table(value: Any, key: str = "normalize") -> dict[str, Any] | None:
    """``normalize`` as VecNormalize's keyword arguments (None: off): false, true (SB3's
    defaults), a table, or the zoo's string ``"dict(norm_obs=True, norm_reward=False)"``."""
    if isinstance(value, bool):
        return {} if value else None
    if isinstance(value, str):
        try:
            value = literal(value)
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{key}: {value!r} must be true, false or a table of VecNormalize's")
    return value


@dataclass(frozen=True)
class ZooEntry:
    """One rl-zoo3 entry, read: what train-env takes from it."""

    policy: str | None
    n_envs: int | None
    normalize: dict[str, Any] | None  # None: not in the entry (or false)
    normalize_set: bool
    hyperparams: dict[str, Any]
    n_timesteps: int | None  # the zoo's budget: reported, never used


def zoo_entry(entry: Any) -> ZooEntry:
    """An rl-zoo3 hyperparameter entry (one env id's table of the YAML) in train-env's
    terms; a key it cannot honour is a ValueError naming the key and the fix."""
    if not isinstance(entry, dict):
        raise ValueError(f"the entry is {type(entry).__name__}, not a table of hyperparameters")
    params: dict[str, Any] = {}
    policy = n_envs = n_timesteps = None
    normalize: dict[str, Any] | None = None
    for key, value in entry.items():
        if key in ZOO_REFUSED:
            raise ValueError(f"{key}: train-env cannot honour it; {ZOO_REFUSED[key]}")
        if key == "policy":
            if not (isinstance(value, str) and value.isidentifier()):
                raise ValueError(
                    f"policy: {value!r} is not a policy name of the algorithm (custom policy "
                    "classes are not supported); name one, e.g. MlpPolicy"
                )
            policy = value
        elif key == "n_envs":
            if type(value) is not int or value < 1:
                raise ValueError(f"n_envs: {value!r} must be a whole number >= 1")
            n_envs = value
        elif key == "n_timesteps":
            if type(value) not in (int, float) or not math.isfinite(value):
                raise ValueError(f"n_timesteps: {value!r} must be a number")
            n_timesteps = int(value)
        elif key == "normalize":
            normalize = normalize_table(value)
        elif key in ("policy_kwargs", "replay_buffer_kwargs") and isinstance(value, str):
            try:
                params[key] = literal(value)
            except ValueError as exc:
                raise ValueError(f"{key}: {exc}") from None
        else:
            params[str(key)] = value
    check_hyperparams(params)
    return ZooEntry(policy, n_envs, normalize, "normalize" in entry, params, n_timesteps)
