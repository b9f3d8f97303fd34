"""An SB3 or sb3-contrib model as an :class:`EnvBot` (the families: ``envs/networks.py``).

torch and stable-baselines3 are imported inside :func:`env_bot_from_model` only: the
evaluator and a clone replaying a bot never load them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cosmic_curriculum.envs.conv import Branch, ConvLayer, conv_of
from cosmic_curriculum.envs.layers import Layer
from cosmic_curriculum.envs.networks import layers_of, network_of
from cosmic_curriculum.envs.obs_norm import ObsNorm, obs_norm_of
from cosmic_curriculum.envs.policy import EnvBot
from cosmic_curriculum.envs.spaces import Space
from cosmic_curriculum.errors import TrainerError
from cosmic_curriculum.workspace.env_config import EnvSpec


def space_of(space: Any, what: str, *, allow_dict: bool = False) -> Space:
    """A Gymnasium Discrete or Box space (or a Dict of them, for observations) as a
    :class:`Space`; any other is a TrainerError naming the wrapper that fixes it."""
    kind = type(space).__name__
    if kind == "Dict" and allow_dict:
        refused = [k for k, s in space.spaces.items() if type(s).__name__ not in _HELD]
        if refused:
            kept = [k for k in space.spaces if k not in refused]
            part = space.spaces[refused[0]]
            keep = (
                'drop it with {call = "gymnasium.wrappers:FilterObservation", kwargs = '
                f"{{filter_keys = {_toml_list(kept)}}}}}"
                if kept
                else "encode it as a Box with an observation wrapper"
            )
            raise TrainerError(
                f"the {what} space's part {refused[0]!r} is {_named(part)}; "
                f"env bots hold Discrete or Box parts: {keep} in [env] wrappers"
            )
        return Space(
            "Dict",
            parts=tuple((k, space_of(s, f"{what} {k!r}")) for k, s in space.spaces.items()),
        )
    if kind == "Discrete":
        if int(space.start) != 0:
            # SB3 one-hot encodes and predicts from 0 whatever the start: refuse, not guess.
            raise TrainerError(
                f"the {what} space is Discrete with start {int(space.start)}; SB3 policies "
                "need start 0 (wrap the env to shift it)"
            )
        return Space("Discrete", n=int(space.n))
    if kind == "Box":
        return Space(
            "Box",
            shape=tuple(int(d) for d in space.shape),
            low=np.asarray(space.low, dtype=np.float64).reshape(-1),
            high=np.asarray(space.high, dtype=np.float64).reshape(-1),
            dtype=str(space.dtype),
        )
    if what == "action":
        fix = "wrap the env with an action wrapper that takes a Discrete or Box action"
    elif kind in _FLATTENED:
        fix = "wrap the env with gymnasium.wrappers:FlattenObservation"
    else:
        fix = "wrap the env with an observation wrapper that encodes it as a Box"
    raise TrainerError(
        f"the {what} space is {_named(space)}; env bots hold Discrete or Box spaces"
        f"{' (or a Dict of them)' if allow_dict else ''}: {fix}"
    )


# The Gymnasium spaces an env bot holds, and those FlattenObservation turns into a Box.
_HELD = ("Discrete", "Box")
_FLATTENED = ("MultiDiscrete", "MultiBinary", "Tuple", "Dict")


def _named(space: Any) -> str:
    """A space as shown in an error: its repr where that is short and says something."""
    text = " ".join(str(space).split())
    kind = type(space).__name__
    return kind if " at 0x" in text or len(text) > 80 or text == kind else text


def _toml_list(keys: list[str]) -> str:
    return "[" + ", ".join(f'"{k}"' for k in keys) + "]"


def env_bot_from_model(
    model: Any,
    spec: EnvSpec,
    *,
    checkpoint_sha256: str | None = None,
    normalizer: Any = None,
) -> EnvBot:
    """The deterministic action of ``model`` (exactly SB3's ``predict``) and what sampling
    needs, as numpy layers; anything the document cannot express is a TrainerError.

    ``normalizer``: the SB3 ``VecNormalize`` the model trained behind (or ``None``); its
    observation statistics as they are now become the bot's ``obs_norm``."""
    policy = model.policy
    algo = type(model).__name__
    action_space = space_of(policy.action_space, "action")
    net = network_of(policy, algo, action_space.kind == "Box")
    obs_space, scale, branches = _observation(policy, net.extractor, algo)
    conv, features = _image_layers(net.extractor, algo)
    provenance: dict[str, Any] = {"algo": algo, "timesteps": int(model.num_timesteps)}
    if checkpoint_sha256 is not None:
        provenance["checkpoint_sha256"] = checkpoint_sha256
    return EnvBot(
        spec,
        obs_space,
        action_space,
        (*features, *net.layers),
        head=net.head,
        scale=scale,
        log_std=net.log_std,
        provenance=provenance,
        obs_norm=_obs_norm(normalizer, obs_space, algo),
        squash=net.squash,
        log_std_layer=net.log_std_layer,
        conv=conv,
        branches=branches,
        channels_last=bool(getattr(net.extractor, "channels_last", False)) and bool(conv),
    )


def _image_layers(extractor: Any, algo: str) -> tuple[tuple[ConvLayer, ...], tuple[Layer, ...]]:
    """A NatureCNN's or BoardCNN's convolutions, and its Linear layers after the Flatten
    (which come before the policy's own); nothing for any other extractor."""
    from stable_baselines3.common.torch_layers import NatureCNN

    if not isinstance(extractor, NatureCNN | _board_cnn()):
        return (), ()
    where = f"the {algo} policy's"
    conv, rest = conv_of(list(extractor.cnn), where)
    return conv, layers_of([*rest, *extractor.linear], f"the {algo} policy's features extractor")


def _observation(policy: Any, extractor: Any, algo: str) -> tuple[Space, float, tuple[Branch, ...]]:
    """The observation space as the extractor reads it, the image scale, and a Dict's
    image keys through their own NatureCNN."""
    from stable_baselines3.common.preprocessing import is_image_space
    from stable_baselines3.common.torch_layers import (
        CombinedExtractor,
        FlattenExtractor,
        NatureCNN,
    )
    from torch import nn

    space = policy.observation_space
    if isinstance(extractor, FlattenExtractor | NatureCNN | _board_cnn()):
        scale = 1.0
        if type(space).__name__ == "Box" and policy.normalize_images and is_image_space(space):
            scale = 1.0 / 255.0  # SB3's preprocess_obs divides image observations
        return space_of(space, "observation"), scale, ()
    if isinstance(extractor, CombinedExtractor):
        branches, scales = [], set()
        for key, sub in extractor.extractors.items():
            if isinstance(sub, NatureCNN):
                conv, layers = _image_layers(sub, algo)
                branches.append(Branch(key, conv, layers))
                divided = policy.normalize_images and is_image_space(space.spaces[key])
                scales.add(1.0 / 255.0 if divided else 1.0)
            elif not isinstance(sub, nn.Flatten):
                raise TrainerError(
                    f"cannot export the {algo} policy: observation key {key!r} goes through "
                    f"{type(sub).__name__}; env bots replay Dict observations of flattened "
                    "keys and NatureCNN image keys (wrap the env to drop or flatten the key)"
                )
        if len(scales) > 1:
            raise TrainerError(
                f"cannot export the {algo} policy: its image keys are divided by 255 and "
                "not alike; give every image key the same dtype and bounds"
            )
        # CombinedExtractor concatenates in its own key order; flattened keys are not
        # divided (SB3 divides only image keys, which have a CNN).
        parts = tuple(
            (key, space_of(space.spaces[key], f"observation {key!r}"))
            for key in extractor.extractors
        )
        return Space("Dict", parts=parts), scales.pop() if scales else 1.0, tuple(branches)
    raise TrainerError(
        f"cannot export a {algo} policy with the {type(extractor).__name__} features "
        "extractor: env bots replay MlpPolicy (FlattenExtractor), CnnPolicy (NatureCNN), "
        "BoardCNN and MultiInputPolicy (CombinedExtractor of flattened keys)"
    )


def _board_cnn() -> type[Any]:
    # Imported here: the module imports torch, which only training and export load.
    from cosmic_curriculum.envs.board_cnn import BoardCNN

    return BoardCNN


def _obs_norm(normalizer: Any, obs_space: Space, algo: str) -> ObsNorm | None:
    obs_norm = obs_norm_of(normalizer)
    if obs_norm is None:
        return None
    sizes, expected = obs_norm.sizes(), obs_space.box_sizes()
    if any(expected.get(key) != size for key, size in sizes.items()):
        raise TrainerError(
            f"the VecNormalize statistics hold {sizes} values but the {algo} policy's "
            f"observations have {expected}; pass the model's own VecNormalize"
        )
    parts = [obs_norm.stats] if obs_norm.stats is not None else [*(obs_norm.keys or {}).values()]
    if not all(np.isfinite(p.mean).all() and np.isfinite(p.var).all() for p in parts if p):
        raise TrainerError(
            "the VecNormalize statistics are not finite (the env gave a non-finite "
            "observation); fix the env and train again"
        )
    return obs_norm
