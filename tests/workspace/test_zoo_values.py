"""The values of a trainer's hyperparameters: rl-zoo3's Python-ish strings read without
evaluating anything, schedules, and the zoo keys train-env honours or refuses."""

from __future__ import annotations

from typing import Any

import pytest

from cosmic_curriculum.workspace.zoo_values import (
    ACTIVATIONS,
    MAX_LITERAL_DEPTH,
    ZOO_REFUSED,
    check_hyperparams,
    literal,
    normalize_table,
    schedule_start,
    zoo_entry,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("dict(net_arch=[64, 64])", {"net_arch": [64, 64]}),
        (
            "dict(log_std_init=-2, ortho_init=False, activation_fn=nn.ReLU, "
            "net_arch=dict(pi=[64], vf=[64]))",
            {
                "log_std_init": -2,
                "ortho_init": False,
                "activation_fn": "nn.ReLU",
                "net_arch": {"pi": [64], "vf": [64]},
            },
        ),
        ("dict(norm_obs=True, norm_reward=False)", {"norm_obs": True, "norm_reward": False}),
        ("{'norm_obs': False, 'norm_reward': True}", {"norm_obs": False, "norm_reward": True}),
        ("dict(activation_fn=th.nn.Tanh)", {"activation_fn": "nn.Tanh"}),
        ("dict(activation_fn=torch.nn.GELU)", {"activation_fn": "nn.GELU"}),
        (
            "dict(x=(1, 'episode'), y=None, z=+1.5e-3)",
            {"x": [1, "episode"], "y": None, "z": 1.5e-3},
        ),
        ("  dict(\n  net_arch=[400, 300])  ", {"net_arch": [400, 300]}),
        ("-3.29", -3.29),
    ],
)
def test_zoo_strings_are_read_as_data(text: str, expected: Any) -> None:
    assert literal(text) == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("__import__('os').system('x')", "only dict()"),
        ("dict(a=__import__('os'))", "only dict()"),
        ("dict(a=os.system)", "'os.system'"),
        ("dict(a=nn.Module)", "'nn.Module'"),
        ("dict(optimizer_class=RMSpropTFLike)", "'RMSpropTFLike'"),
        ("().__class__.__bases__[0].__subclasses__()", "only dict()"),
        ("open('/etc/passwd').read()", "only dict()"),
        ("lambda: 1", "only dict()"),
        ("9**9**9", "only dict()"),
        ("[x for x in range(10**9)]", "only dict()"),
        ("dict(**{'a': 1})", "keyword arguments"),
        ("dict([('a', 1)])", "keyword arguments"),
        ("{1: 2}", "not a string"),
        ("dict(a=1e999)", "non-finite"),
        ("dict(a=b'x')", "only dict()"),
        ("dict(a=", "not a Python literal"),
        ("import os", "not a Python literal"),
        ("[" * (MAX_LITERAL_DEPTH + 2) + "]" * (MAX_LITERAL_DEPTH + 2), "nests deeper"),
        ("(" * 100_000, "longer than"),
        ("x" * 5000, "longer than"),
    ],
)
def test_hostile_or_foreign_strings_are_refused(text: str, why: str) -> None:
    with pytest.raises(ValueError) as info:
        literal(text)
    assert why in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("value", "start"),
    [("lin_0.001", 0.001), ("lin_2.5e-4", 2.5e-4), ("lin_7", 7.0), ("0.001", None), ("x", None)],
)
def test_schedule_strings(value: str, start: float | None) -> None:
    assert schedule_start(value) == start


@pytest.mark.parametrize("value", ["lin_", "lin_abc", "lin_-1", "lin_0", "lin_inf", "lin_nan"])
def test_bad_schedules_are_refused(value: str) -> None:
    with pytest.raises(ValueError, match="lin_"):
        schedule_start(value)


def _board(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {"features_extractor_class": "BoardCNN", "features_extractor_kwargs": kwargs}


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"learning_rate": "fast"}, "learning_rate: 'fast' is neither"),
        ({"clip_range": "lin_x"}, "lin_<number>"),
        ({"policy_kwargs": "dict(net_arch=[64])"}, "policy_kwargs: must be a table"),
        ({"policy_kwargs": {"activation_fn": "nn.Banana"}}, "policy_kwargs.activation_fn"),
        ({"policy_kwargs": {"net_arch": {"pi": ["nn.Exec"]}}}, "policy_kwargs.net_arch.pi"),
        ({"noise_type": "normal"}, "set both"),
        ({"noise_std": 0.1}, "set both"),
        ({"noise_type": "pink", "noise_std": 0.1}, "noise_type: 'pink'"),
        ({"noise_type": "normal", "noise_std": "big"}, "noise_std"),
        ({"n_envs": 4}, "set [trainer] n_envs"),
        ({"policy": "MlpPolicy"}, "set [trainer] policy"),
        ({"normalize": True}, "set [trainer] normalize"),
        ({"seed": 1}, "the attempt's"),
        ({"n_timesteps": 10}, "the stage's timesteps"),
        ({"gamma": float("nan")}, "must hold only"),
        *(
            ({"policy_kwargs": kwargs}, needle)
            for kwargs, needle in [
                ({"features_extractor_class": "NatureCNN"}, "'NatureCNN' is not 'BoardCNN'"),
                ({"features_extractor_class": 3}, "features_extractor_class: 3 is not"),
                (_board({"stride": 2}), "features_extractor_kwargs.stride: not one of"),
                (_board({"channels": []}), "channels: [] must be a list of integers"),
                (_board({"channels": 64}), "channels: 64 must be a list of integers"),
                (_board({"channels": [64, 0]}), "from 1 to 4096"),
                (_board({"channels": [64, True]}), "must be a list of integers"),
                (_board({"kernel": 3.0}), "kernel: 3.0 must be an integer"),
                (_board({"features": 10_000}), "features: 10000 must be an integer from 1"),
                (_board({"channels_last": 1}), "channels_last: 1 must be true or false"),
                ({**_board({}), "features_extractor_kwargs": [3]}, "must be a table"),
            ]
        ),
    ],
)
def test_hyperparams_train_env_cannot_honour_are_refused(
    params: dict[str, Any], needle: str
) -> None:
    with pytest.raises(ValueError) as info:
        check_hyperparams(params)
    assert needle in str(info.value), info.value


def test_hyperparams_in_their_json_form_pass() -> None:
    params = {
        "learning_rate": "lin_3e-4",
        "clip_range": 0.2,
        "policy_kwargs": {"activation_fn": "nn.Tanh", "net_arch": [64]},
        "noise_type": "ornstein-uhlenbeck",
        "noise_std": [0.1, 0.2],
        "train_freq": [1, "episode"],
    }
    assert check_hyperparams(params) is params
    board = {"channels": [32, 64], "kernel": 5, "features": 128, "channels_last": False}
    assert check_hyperparams({"policy_kwargs": _board(board)})
    assert check_hyperparams({"policy_kwargs": {"features_extractor_class": "BoardCNN"}})
    # NatureCNN's own keyword arguments (CnnPolicy's default extractor) are SB3's to check
    assert check_hyperparams({"policy_kwargs": {"features_extractor_kwargs": {"features_dim": 64}}})
    assert set(ACTIVATIONS) >= {"ReLU", "Tanh", "GELU"}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (False, None),
        (True, {}),
        ({"norm_reward": False}, {"norm_reward": False}),
        ("dict(norm_obs=True, norm_reward=False)", {"norm_obs": True, "norm_reward": False}),
    ],
)
def test_normalize_forms(value: Any, expected: dict[str, Any] | None) -> None:
    assert normalize_table(value) == expected


@pytest.mark.parametrize("value", [1, "yes", "__import__('os')", [True]])
def test_bad_normalize_is_refused(value: Any) -> None:
    with pytest.raises(ValueError, match="normalize"):
        normalize_table(value)


def test_a_zoo_entry_in_train_env_terms() -> None:
    entry = zoo_entry(
        {
            "normalize": "dict(norm_obs=True, norm_reward=False)",
            "n_envs": 4,
            "n_timesteps": 1e5,
            "policy": "MlpPolicy",
            "learning_rate": "lin_7.3e-4",
            "gamma": 0.98,
            "policy_kwargs": "dict(log_std_init=-2, net_arch=[64, 64], activation_fn=nn.ReLU)",
        }
    )
    assert (entry.policy, entry.n_envs, entry.n_timesteps) == ("MlpPolicy", 4, 100_000)
    assert entry.normalize == {"norm_obs": True, "norm_reward": False}
    assert entry.hyperparams == {
        "learning_rate": "lin_7.3e-4",
        "gamma": 0.98,
        "policy_kwargs": {"log_std_init": -2, "net_arch": [64, 64], "activation_fn": "nn.ReLU"},
    }
    off = zoo_entry({"normalize": False})
    assert off.normalize is None and off.normalize_set


@pytest.mark.parametrize("key", sorted(ZOO_REFUSED))
def test_zoo_keys_train_env_cannot_honour_name_the_key_and_the_fix(key: str) -> None:
    with pytest.raises(ValueError) as info:
        zoo_entry({key: "x", "n_envs": 2})
    assert str(info.value).startswith(f"{key}: train-env cannot honour it; ")
    assert ZOO_REFUSED[key] in str(info.value)


@pytest.mark.parametrize(
    ("entry", "needle"),
    [
        ([1, 2], "not a table"),
        ({"policy": "my_module.MyPolicy"}, "custom policy classes"),
        ({"n_envs": 0}, "n_envs"),
        ({"n_envs": 2.5}, "n_envs"),
        ({"n_timesteps": "many"}, "n_timesteps"),
        ({"policy_kwargs": "dict(a=os.getcwd())"}, "policy_kwargs: "),
        ({"learning_rate": "lin_fast"}, "learning_rate"),
    ],
)
def test_bad_zoo_entries_are_refused(entry: Any, needle: str) -> None:
    with pytest.raises(ValueError) as info:
        zoo_entry(entry)
    assert needle in str(info.value)
