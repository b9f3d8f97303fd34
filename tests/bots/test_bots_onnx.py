"""ONNX bots: the graph computes exactly the numpy bot's action, carries its metadata, and
plays wherever a bot file is accepted (evaluate, replay, ladder, bot:<path>)."""

from __future__ import annotations

import hashlib
import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from bot_helpers import REPO, arena_observations, mlp_doc, write
from typer.testing import CliRunner

from cosmic_curriculum import bots
from cosmic_curriculum.arena.match import play_pairs
from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.bots.onnx_model import METADATA_KEYS, OnnxBot, write_onnx
from cosmic_curriculum.cli import app
from cosmic_curriculum.errors import BotError
from cosmic_curriculum.evaluation.evaluate import run_evaluation

TOLERANCE = 1e-5


def scaled_layers(rng: np.random.Generator, sizes: tuple[int, ...], acts: tuple[str, ...]):
    """Random layers at the scale of trained policies (large enough that some actions
    saturate, small enough that float32 rounding stays far below the tolerance)."""
    return [
        (rng.normal(size=(o, i)) * 0.5, rng.normal(size=o) * 0.5, act)
        for (i, o), act in zip(itertools.pairwise(sizes), acts, strict=True)
    ]


CASES: dict[str, dict[str, Any]] = {
    "tanh-normalised": {"sizes": (OBS_SIZE, 64, 64, ACT_SIZE), "acts": ("tanh", "tanh", "linear")},
    "relu-plain": {
        "sizes": (OBS_SIZE, 32, 16, ACT_SIZE),
        "acts": ("relu", "relu", "linear"),
        "plain": True,
    },
    "linear-only": {"sizes": (OBS_SIZE, ACT_SIZE), "acts": ("linear",)},
}


SHORT = GameSettings(allow_vertical=False, time_limit=10.0)


def case_doc(name: str) -> dict[str, Any]:
    case = CASES[name]
    rng = np.random.default_rng(7)
    layers = scaled_layers(rng, case["sizes"], case["acts"])
    if case.get("plain"):
        return mlp_doc(rng, layers=layers, obs_mean=None, obs_std=None, game=SHORT.model_dump())
    # a few tiny deviations, so the normalisation's clip at ±10 is reached
    std = rng.uniform(0.5, 2.0, size=OBS_SIZE)
    std[:4] = 0.02
    return mlp_doc(rng, layers=layers, obs_std=std, game=SHORT.model_dump())


@pytest.fixture(scope="module")
def real_obs() -> np.ndarray:
    return arena_observations(1000, seed=3)


@pytest.mark.parametrize("name", list(CASES))
def test_onnx_action_equals_the_numpy_bot(tmp_path: Path, name: str, real_obs: np.ndarray) -> None:
    json_path = write(tmp_path, case_doc(name))
    onnx_bot = bots.load_bot(write_onnx(json_path))
    numpy_bot = bots.load_bot(json_path)
    rng = np.random.default_rng(0)
    random_obs = rng.uniform(-1.0, 1.0, size=(10_000, OBS_SIZE)).astype(np.float32)
    for obs in (random_obs, real_obs):
        expected = numpy_bot.act(obs, rng)
        got = onnx_bot.act(obs, rng)
        assert got.dtype == np.float32 and got.shape == (len(obs), ACT_SIZE)
        np.testing.assert_allclose(got, expected, atol=TOLERANCE, rtol=0)
    # the action clip is exercised: some actions saturate, others do not
    assert np.any(np.abs(expected) == 1.0) and np.any(np.abs(expected) < 0.99)


def test_model_is_valid_opset_17_with_a_dynamic_batch_and_metadata(tmp_path: Path) -> None:
    doc = case_doc("tanh-normalised")
    json_path = write(tmp_path, doc)
    out = write_onnx(json_path)
    assert out == tmp_path / "bot.onnx"
    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)]
    (inp,), (outp,) = model.graph.input, model.graph.output
    assert inp.name == "obs" and outp.name == "action"
    for value, width in ((inp, OBS_SIZE), (outp, ACT_SIZE)):
        assert value.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
        batch, size = value.type.tensor_type.shape.dim
        assert batch.dim_param == "batch" and size.dim_value == width
    meta = {p.key: p.value for p in model.metadata_props}
    assert sorted(meta) == sorted(METADATA_KEYS)
    assert json.loads(meta["game"]) == doc["game"]
    assert json.loads(meta["provenance"]) == doc["provenance"]
    assert meta["decision_ticks"] == "8"
    assert float(meta["seconds_per_decision"]) == pytest.approx(8 * GameSettings().tick)
    assert meta["source_sha256"] == hashlib.sha256(json_path.read_bytes()).hexdigest()
    assert meta["partial"] == "false" and meta["action_names"].split(",")[0] == "thrust"
    # any batch size runs, in one call, including a single observation
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    for n in (1, 7, 300):
        (action,) = session.run(None, {"obs": np.zeros((n, OBS_SIZE), dtype=np.float32)})
        assert action.shape == (n, ACT_SIZE)


def test_onnx_bot_is_a_policy_with_the_files_game(tmp_path: Path) -> None:
    onnx_path = write_onnx(write(tmp_path, case_doc("relu-plain")))
    bot = bots.load_bot(onnx_path)
    assert isinstance(bot, OnnxBot) and isinstance(bot, bots.Bot)
    assert bot.kind == "onnx" and bot.decision_ticks == 8
    assert bot.game == SHORT
    assert bot.act(np.zeros((0, OBS_SIZE), np.float32), np.random.default_rng()).shape == (0, 6)
    bot.reset(np.ones(3, dtype=bool))
    assert isinstance(bots.bot_from_spec(f"bot:{onnx_path}"), OnnxBot)


class CountingSession:
    """Wraps an onnxruntime session and counts its runs."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[int] = []

    def run(self, names: Any, feeds: dict[str, np.ndarray]) -> Any:
        self.calls.append(len(next(iter(feeds.values()))))
        return self.inner.run(names, feeds)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_match_runs_the_session_once_per_decision_for_the_whole_batch(tmp_path: Path) -> None:
    json_path = write(tmp_path, case_doc("tanh-normalised"))
    onnx_bot = bots.load_bot(write_onnx(json_path))
    assert isinstance(onnx_bot, OnnxBot)
    counting = CountingSession(onnx_bot.session)
    onnx_bot.session = counting
    settings = GameSettings(time_limit=8.0)
    res = play_pairs(onnx_bot, bots.InertBot(), 5, seed=1, settings=settings)
    decisions = -(-settings.max_ticks // 8)
    assert 0 < len(counting.calls) <= decisions
    assert set(counting.calls) == {10}  # every game of the batch in each run
    # the twin plays the same match as its JSON bot
    twin = play_pairs(bots.load_bot(json_path), bots.InertBot(), 5, seed=1, settings=settings)
    np.testing.assert_array_equal(res.outcomes, twin.outcomes)


@pytest.mark.slow
def test_evaluate_ladder_and_replay_take_onnx_bots(tmp_path: Path) -> None:
    ws = tmp_path / "bots"
    ws.mkdir()
    json_path = write(ws, case_doc("tanh-normalised"), "tanhbot.json")
    onnx_path = write_onnx(json_path)
    solo = write_onnx(write(tmp_path, case_doc("relu-plain"), "relubot.json"), ws / "relubot.onnx")
    (ws / "rookie.json").write_text((REPO / "bots" / "rookie.json").read_text())
    history = tmp_path / "eval_history.json"
    record = run_evaluation(onnx_path, ws / "rookie.json", history_path=history, episodes=4)
    assert record["episodes"] == 4
    assert record["candidate_sha256"] == hashlib.sha256(onnx_path.read_bytes()).hexdigest()
    assert record["candidate_decision_ticks"] == 8
    assert record["game"] == SHORT.model_dump()  # from the ONNX metadata
    # a twin of a JSON in the same directory is the same bot: the ladder plays it once
    assert bots.bot_files(ws) == [solo, ws / "rookie.json", json_path]
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            *["ladder", "--bots-dir", str(ws), "--pairs", "1", "--out-dir", str(tmp_path)],
            *["--game-from", str(onnx_path)],
        ],
    )
    assert result.exit_code == 0, result.output
    ladder = json.loads((tmp_path / "ladder.json").read_text())
    assert sorted(ladder["bots"]) == ["relubot", "rookie", "tanhbot"]
    out = tmp_path / "match.png"
    result = runner.invoke(app, ["replay", str(solo), str(onnx_path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(b"\x89PNG")


def test_export_onnx_command(tmp_path: Path) -> None:
    json_path = write(tmp_path, case_doc("linear-only"))
    runner = CliRunner()
    result = runner.invoke(app, ["export-onnx", str(json_path)])
    assert result.exit_code == 0, result.output
    assert result.output == f"wrote {tmp_path / 'bot.onnx'}\n"
    out = tmp_path / "elsewhere" / "game-bot.onnx"
    out.parent.mkdir()
    result = runner.invoke(app, ["export-onnx", str(json_path), "--out", str(out)])
    assert result.exit_code == 0 and bots.load_bot(out).decision_ticks == 8


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bots/rookie.json"], "a scripted bot has no network to convert; only mlp bots"),
        (["missing.json"], "missing.json: bot file not found"),
        (["bot.json", "--out", "bot.bin"], "--out bot.bin: name the ONNX file with a .onnx"),
    ],
)
def test_export_onnx_errors_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, case_doc("linear-only"))
    (tmp_path / "bots").mkdir()
    (tmp_path / "bots" / "rookie.json").write_text((REPO / "bots" / "rookie.json").read_text())
    result = CliRunner().invoke(app, ["export-onnx", *args])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def _model_without(tmp_path: Path, key: str) -> Path:
    """A valid ONNX file from our exporter without one of its metadata keys."""
    from onnx import helper

    model = onnx.load(str(write_onnx(write(tmp_path, case_doc("linear-only")))))
    kept = {p.key: p.value for p in model.metadata_props if p.key != key}
    del model.metadata_props[:]
    helper.set_model_props(model, kept)
    path = tmp_path / "altered.onnx"
    onnx.save(model, str(path))
    return path


def _model_of_width(tmp_path: Path, width: int) -> Path:
    """A loadable model taking ``width`` inputs (not the arena's), with our metadata."""
    from onnx import TensorProto, helper, numpy_helper

    weights = numpy_helper.from_array(np.zeros((width, ACT_SIZE), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["obs", "w"], ["action"])],
        "g",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", width])],
        [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", ACT_SIZE])],
        initializer=[weights],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    helper.set_model_props(model, {"decision_ticks": "8", "game": "{}"})
    path = tmp_path / f"width{width}.onnx"
    onnx.save(model, str(path))
    return path


def test_faulty_onnx_files_are_refused_with_one_line(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"not a protobuf at all")
    with pytest.raises(BotError, match=r"garbage.onnx: not a loadable ONNX model"):
        bots.load_bot(garbage)
    with pytest.raises(BotError, match=r"nothing.onnx: bot file not found"):
        bots.load_bot(tmp_path / "nothing.onnx")
    (tmp_path / "folder.onnx").mkdir()
    with pytest.raises(BotError, match=r"folder.onnx: not a regular file"):
        bots.load_bot(tmp_path / "folder.onnx")
    with pytest.raises(BotError, match=r"metadata_props lack decision_ticks"):
        bots.load_bot(_model_without(tmp_path, "decision_ticks"))
    with pytest.raises(BotError, match=r"metadata_props lack game"):
        bots.load_bot(_model_without(tmp_path, "game"))
    with pytest.raises(BotError, match=r"input 'obs' is tensor\(float\) \['batch', 40\], expect"):
        bots.load_bot(_model_of_width(tmp_path, 40))
    assert bots.load_bot(_model_of_width(tmp_path, OBS_SIZE)).game == GameSettings()
    bad_game = _model_of_width(tmp_path, OBS_SIZE)
    model = onnx.load(str(bad_game))
    onnx.helper.set_model_props(model, {"decision_ticks": "8", "game": '{"tick": -1}'})
    onnx.save(model, str(bad_game))
    with pytest.raises(BotError, match=r"metadata game: tick"):
        bots.load_bot(bad_game)


def test_loading_json_bots_imports_neither_onnx_nor_onnxruntime() -> None:
    code = (
        "import sys\n"
        "from cosmic_curriculum import bots\n"
        f"bots.load_bot({str(REPO / 'bots' / 'rookie.json')!r})\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'onnx', 'onnxruntime'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_python_example_of_bot_format_md_runs(tmp_path: Path) -> None:
    text = (REPO / "docs" / "BOT_FORMAT.md").read_text()
    section = text.split("## Use the bot in your game (ONNX)", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    onnx_path = write_onnx(write(tmp_path, case_doc("tanh-normalised")))
    scope: dict[str, Any] = {}
    exec(code.replace("bots/my-bot.onnx", str(onnx_path)), scope)
    assert scope["action"].shape == (2, ACT_SIZE) and scope["every"] == pytest.approx(8 / 60)
    assert scope["game"]["time_limit"] == 10.0
