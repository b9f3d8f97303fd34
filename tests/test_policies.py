"""Bots: numpy MLP inference, the scripted rookie, and every way a bot file can be wrong."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.errors import BotError, CurriculumError
from cosmic_curriculum.policies import (
    BOT_FORMAT,
    Bot,
    InertBot,
    MlpBot,
    RandomBot,
    ScriptedBot,
    bot_from_document,
    bot_from_spec,
    bot_sha256,
    load_bot,
    mlp_bot_document,
    rookie_document,
    save_bot,
    simple_bot_document,
)

REPO = Path(__file__).resolve().parent.parent


def random_layers(rng: np.random.Generator, sizes=(OBS_SIZE, 16, 8, ACT_SIZE)):
    acts = ["tanh", "relu", "linear"]
    return [
        (rng.normal(size=(o, i)), rng.normal(size=o), acts[k])
        for k, (i, o) in enumerate(itertools.pairwise(sizes))
    ]


def mlp_doc(rng: np.random.Generator | None = None, **kw: Any) -> dict[str, Any]:
    rng = rng or np.random.default_rng(0)
    args: dict[str, Any] = {
        "layers": random_layers(rng),
        "obs_mean": rng.normal(size=OBS_SIZE),
        "obs_std": rng.uniform(0.5, 2.0, size=OBS_SIZE),
        "game": GameSettings(allow_vertical=False).model_dump(),
        "decision_ticks": 8,
        "provenance": {"experiment": "unit", "timesteps": 123, "git_commit": None},
    }
    args.update(kw)
    return mlp_bot_document(**args)


def write(tmp_path: Path, doc: Any, name: str = "bot.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def test_mlp_inference_matches_a_hand_computation() -> None:
    rng = np.random.default_rng(1)
    layers = random_layers(rng)
    mean, std = rng.normal(size=OBS_SIZE), rng.uniform(0.5, 2.0, size=OBS_SIZE)
    bot = MlpBot(layers, mean, std, decision_ticks=4)
    obs = rng.normal(size=(50, OBS_SIZE)).astype(np.float32) * 30.0
    x = np.clip((obs - mean) / std, -10.0, 10.0)
    x = np.tanh(x @ layers[0][0].T + layers[0][1])
    x = np.maximum(x @ layers[1][0].T + layers[1][1], 0.0)
    x = np.clip(x @ layers[2][0].T + layers[2][1], -1.0, 1.0)
    out = bot.act(obs, np.random.default_rng())
    assert out.shape == (50, ACT_SIZE) and out.dtype == np.float32
    np.testing.assert_allclose(out, x, rtol=1e-4, atol=1e-5)
    assert isinstance(bot, Bot)


def test_mlp_without_normalisation_uses_raw_observations() -> None:
    rng = np.random.default_rng(2)
    layers = random_layers(rng, sizes=(OBS_SIZE, ACT_SIZE))
    layers[0] = (layers[0][0], layers[0][1], "linear")
    obs = rng.normal(size=(3, OBS_SIZE)).astype(np.float32)
    out = MlpBot(layers).act(obs, rng)
    np.testing.assert_allclose(out, np.clip(obs @ layers[0][0].T + layers[0][1], -1, 1), atol=1e-5)


def test_round_trip_through_a_file(tmp_path: Path) -> None:
    doc = mlp_doc()
    path = tmp_path / "bots" / "b.json"
    save_bot(path, doc)
    assert json.loads(path.read_text()) == doc
    bot = load_bot(path)
    assert isinstance(bot, MlpBot) and bot.decision_ticks == 8 and bot.kind == "mlp"
    assert bot.game == GameSettings(allow_vertical=False)
    rebuilt = bot_from_document(doc)
    obs = np.random.default_rng(3).uniform(-1, 1, size=(7, OBS_SIZE)).astype(np.float32)
    np.testing.assert_array_equal(bot.act(obs, np.random.default_rng()), rebuilt.act(obs, None))  # type: ignore[arg-type]
    assert len(bot_sha256(path)) == 64
    assert not list(path.parent.glob(".*tmp-*"))  # no temp file left behind


def test_shipped_bots_load_and_rookie_json_equals_the_document() -> None:
    assert json.loads((REPO / "bots" / "rookie.json").read_text()) == rookie_document()
    for kind in ("inert", "random"):
        shipped = json.loads((REPO / "bots" / f"{kind}.json").read_text())
        assert shipped == simple_bot_document(kind)  # regenerate both if the game changes
    assert isinstance(load_bot(REPO / "bots" / "rookie.json"), ScriptedBot)
    assert isinstance(load_bot(REPO / "bots" / "inert.json"), InertBot)
    assert isinstance(load_bot(REPO / "bots" / "random.json"), RandomBot)


def test_simple_bots() -> None:
    obs = np.zeros((5, OBS_SIZE), dtype=np.float32)
    assert np.all(InertBot().act(obs, np.random.default_rng()) == 0.0)
    a = RandomBot().act(obs, np.random.default_rng(0))
    b = RandomBot().act(obs, np.random.default_rng(0))
    np.testing.assert_array_equal(a, b)
    assert a.shape == (5, ACT_SIZE) and np.all(np.abs(a) <= 1.0) and a.std() > 0.3
    assert bot_from_document(simple_bot_document("random", decision_ticks=3)).decision_ticks == 3


def test_bot_from_spec(tmp_path: Path) -> None:
    assert bot_from_spec("inert").kind == "inert"
    assert bot_from_spec("random", decision_ticks=4).decision_ticks == 4
    assert bot_from_spec("rookie").kind == "scripted"
    path = write(tmp_path, mlp_doc())
    assert bot_from_spec(f"bot:{path}").kind == "mlp"
    with pytest.raises(BotError, match="not one of inert, random, rookie"):
        bot_from_spec("self-play")


def test_scripted_bot_reset_forgets_only_masked_games() -> None:
    bot = bot_from_spec("rookie")
    assert isinstance(bot, ScriptedBot)
    rng = np.random.default_rng(0)
    obs = np.zeros((4, OBS_SIZE), dtype=np.float32)
    obs[:, 6] = 1.0  # facing +x
    obs[:, 9 + 2] = 1.0  # level
    bot.act(obs, rng)
    bot.reset(np.array([True, False, False, False]))
    assert bot._fresh.tolist() == [True, False, False, False]
    out = bot.act(obs, rng)
    assert out.shape == (4, ACT_SIZE) and np.all(np.abs(out) <= 1.0)
    bot.reset(np.ones(7, dtype=bool))  # another batch size: start over
    assert bot.act(np.tile(obs[:1], (7, 1)), rng).shape == (7, ACT_SIZE)


# --- malformed files: each gives one BotError line naming the file and the fault ----------


def broken(mutate) -> dict[str, Any]:
    doc = copy.deepcopy(mlp_doc())
    mutate(doc)
    return doc


def set_path(doc: dict[str, Any], path: list[Any], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


CASES = [
    ("wrong format tag", broken(lambda d: set_path(d, ["format"], "pickle")), "format is"),
    ("future version", broken(lambda d: set_path(d, ["version"], 2)), "version 2"),
    ("bool version", broken(lambda d: set_path(d, ["version"], True)), "version True"),
    ("unknown kind", broken(lambda d: set_path(d, ["kind"], "lstm")), "kind 'lstm'"),
    ("missing key", broken(lambda d: d.pop("game")), "missing key 'game'"),
    ("unknown key", broken(lambda d: set_path(d, ["extra"], 1)), "unknown key"),
    ("obs size", broken(lambda d: set_path(d, ["observation_size"], 42)), "observation_size 42"),
    ("action size", broken(lambda d: set_path(d, ["action_size"], 7)), "action_size 7"),
    ("ticks zero", broken(lambda d: set_path(d, ["decision_ticks"], 0)), "decision_ticks 0"),
    ("ticks float", broken(lambda d: set_path(d, ["decision_ticks"], 2.5)), "decision_ticks must"),
    (
        "bad game setting",
        broken(lambda d: set_path(d, ["game", "tick"], -1.0)),
        "game settings invalid: tick=-1.0",
    ),
    (
        "unknown game setting",
        broken(lambda d: set_path(d, ["game", "gravity"], 9.8)),
        "unknown setting 'gravity'",
    ),
    ("provenance", broken(lambda d: set_path(d, ["provenance"], [])), "provenance must"),
    ("partial", broken(lambda d: set_path(d, ["partial"], "no")), "partial must"),
    (
        "first layer width",
        broken(lambda d: set_path(d, ["network", "layers", 0, "weights"], [[0.0] * 42] * 16)),
        "layers[0].weights is 16x42 but its input has 43",
    ),
    (
        "chain broken",
        broken(lambda d: set_path(d, ["network", "layers", 1, "weights"], [[0.0] * 15] * 8)),
        "layers[1].weights is 8x15 but its input has 16",
    ),
    (
        "bias length",
        broken(lambda d: set_path(d, ["network", "layers", 1, "bias"], [0.0] * 7)),
        "layers[1].bias has 7 values, expected 8",
    ),
    (
        "ragged weights",
        broken(lambda d: set_path(d, ["network", "layers", 1, "weights"], [[0.0] * 16, [0.0]])),
        "not a rectangular array",
    ),
    (
        "string weights",
        broken(lambda d: set_path(d, ["network", "layers", 2, "bias"], ["a"] * 6)),
        "not a rectangular array",
    ),
    (
        "output size",
        broken(lambda d: d["network"]["layers"].pop()),
        "gives 8 outputs, expected action_size 6",
    ),
    (
        "last activation",
        broken(lambda d: set_path(d, ["network", "layers", 2, "activation"], "tanh")),
        "must be 'linear'",
    ),
    (
        "unknown activation",
        broken(lambda d: set_path(d, ["network", "layers", 0, "activation"], "gelu")),
        "activation 'gelu'",
    ),
    ("no layers", broken(lambda d: set_path(d, ["network", "layers"], [])), "non-empty list"),
    (
        "inf bias",
        broken(lambda d: set_path(d, ["network", "layers", 0, "bias", 3], 1e400)),
        "Infinity, which is not a finite number",
    ),
    (
        "std zero",
        broken(lambda d: set_path(d, ["network", "obs_std", 5], 0.0)),
        "obs_std must be > 0",
    ),
    (
        "mean size",
        broken(lambda d: set_path(d, ["network", "obs_mean"], [0.0] * 5)),
        "obs_mean has 5 entries",
    ),
    ("top level list", [1, 2], "top level must be a JSON object"),
]


@pytest.mark.parametrize("doc,fault", [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_documents_fail_with_one_line(tmp_path: Path, doc: Any, fault: str) -> None:
    path = write(tmp_path, doc)
    with pytest.raises(BotError) as info:
        load_bot(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert fault in message
    assert "\n" not in message
    assert isinstance(info.value, CurriculumError) and info.value.exit_code == 1


def test_nan_weights_are_refused(tmp_path: Path) -> None:
    doc = mlp_doc()
    text = json.dumps(doc).replace(
        json.dumps(doc["network"]["layers"][0]["weights"][0][0]), "NaN", 1
    )
    with pytest.raises(BotError, match=r"NaN, which is not a finite number"):
        load_bot(write(tmp_path, text))


def test_overflowing_numbers_are_refused(tmp_path: Path) -> None:
    doc = mlp_doc()
    doc["network"]["layers"][1]["bias"][0] = 12345.5
    text = json.dumps(doc).replace("12345.5", "1e999")
    with pytest.raises(BotError, match=r"layers\[1\].bias contains NaN or infinite values"):
        load_bot(write(tmp_path, text))
    doc["network"]["obs_mean"][0] = float("nan")
    with pytest.raises(BotError, match=r"<memory>: network.obs_mean contains NaN"):
        bot_from_document(doc, "<memory>")


def test_bad_scripted_params(tmp_path: Path) -> None:
    doc = rookie_document()
    doc["params"]["reaction_delay"] = -1
    with pytest.raises(BotError, match=r"params invalid: reaction_delay=-1"):
        load_bot(write(tmp_path, doc))
    doc = rookie_document()
    doc["network"] = {}
    with pytest.raises(BotError, match="unknown key"):
        load_bot(write(tmp_path, doc))


@pytest.mark.parametrize(
    "content,fault",
    [
        (None, "bot file not found"),
        ("", "not valid JSON"),
        ("{not json", "not valid JSON"),
        (b"\xff\xfe\x00", "not UTF-8"),
    ],
)
def test_unreadable_files(tmp_path: Path, content: Any, fault: str) -> None:
    path = tmp_path / "bot.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(BotError, match=fault):
        load_bot(path)
    with pytest.raises(BotError, match="is a directory"):
        load_bot(tmp_path)


def test_save_refuses_an_invalid_document_and_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    save_bot(path, mlp_doc())
    before = path.read_bytes()
    bad = mlp_doc()
    bad["format"] = BOT_FORMAT + "-x"
    with pytest.raises(BotError):
        save_bot(path, bad)
    assert path.read_bytes() == before


def test_partial_flag_and_provenance_are_kept(tmp_path: Path) -> None:
    doc = mlp_doc(partial=True, provenance={"experiment": "e", "checkpoint_sha256": "ab"})
    path = tmp_path / "p.json"
    save_bot(path, doc)
    data = json.loads(path.read_text())
    assert data["partial"] is True and data["provenance"]["checkpoint_sha256"] == "ab"
