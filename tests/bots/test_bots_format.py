"""Bot files: round trips, the shipped bots, and every way a file can be wrong."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bot_helpers import REPO, mlp_doc, write

from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.bots import (
    BOT_FORMAT,
    InertBot,
    MlpBot,
    RandomBot,
    ScriptedBot,
    VeteranBot,
    bot_from_document,
    bot_sha256,
    load_bot,
    rookie_document,
    save_bot,
    simple_bot_document,
    veteran_document,
)
from cosmic_curriculum.errors import BotError, CurriculumError


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
    # regenerate with save_bot("bots/veteran.json", veteran_document()) after tuning it
    assert json.loads((REPO / "bots" / "veteran.json").read_text()) == veteran_document()
    assert isinstance(load_bot(REPO / "bots" / "veteran.json"), VeteranBot)
    for kind in ("inert", "random"):
        shipped = json.loads((REPO / "bots" / f"{kind}.json").read_text())
        assert shipped == simple_bot_document(kind)  # regenerate both if the game changes
    assert isinstance(load_bot(REPO / "bots" / "rookie.json"), ScriptedBot)
    assert isinstance(load_bot(REPO / "bots" / "inert.json"), InertBot)
    assert isinstance(load_bot(REPO / "bots" / "random.json"), RandomBot)


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


def test_bad_veteran_params(tmp_path: Path) -> None:
    doc = veteran_document()
    doc["params"]["lead_steps"] = 0
    with pytest.raises(BotError, match=r"params invalid: lead_steps=0: .*greater than or equal"):
        load_bot(write(tmp_path, doc))
    doc = veteran_document()
    doc["params"]["strategy"] = "expert"
    with pytest.raises(BotError, match=r"params invalid: strategy='expert': .*'veteran'"):
        load_bot(write(tmp_path, doc))
    doc = veteran_document()
    doc["params"]["reaction_delay"] = 1  # a rookie key among the veteran's
    with pytest.raises(BotError, match=r"params invalid: unknown setting 'reaction_delay'"):
        load_bot(write(tmp_path, doc))
    doc = rookie_document()
    doc["params"]["lead_horizon"] = 2.0  # a veteran key without the strategy: a rookie
    with pytest.raises(BotError, match=r"params invalid: unknown setting 'lead_horizon'"):
        load_bot(write(tmp_path, doc))


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


def test_the_fault_reported_first_when_a_file_has_several() -> None:
    # a foreign JSON file is named by its header, not by the keys it lacks
    with pytest.raises(BotError, match=r"format is 'x', .*\(not a bot file\?\)"):
        bot_from_document({"format": "x", "zzz": 1})
    doc = mlp_doc()
    del doc["game"], doc["action_size"]
    doc["zz"] = doc["aa"] = 1
    with pytest.raises(BotError, match=r": unknown key\(s\) aa, zz for kind 'mlp'$"):
        bot_from_document(doc)
    del doc["zz"], doc["aa"]
    doc["decision_ticks"] = 0
    with pytest.raises(BotError, match=r": missing key 'action_size'$"):
        bot_from_document(doc)
    doc = mlp_doc()
    del doc["network"]["layers"][1]["bias"]
    with pytest.raises(BotError, match=r": missing key 'network.layers\[1\].bias'$"):
        bot_from_document(doc)
