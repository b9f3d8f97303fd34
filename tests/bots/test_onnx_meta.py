"""The twin check of the curriculum's commits: ONNX metadata read from protobuf bytes
(against the onnx package's own reading of real twins), and a stale or foreign
``bots/<exp>.onnx`` left out of the commit with one warning."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fakes.workspace import fake_env, make_workspace, run_in_process, warnings_reporter
from gitutil import git

from cosmic_curriculum import bots
from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.bots.onnx_meta import metadata, twin_problem
from cosmic_curriculum.bots.onnx_model import write_onnx


def mlp_bot(path: Path, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    layers = [
        (rng.normal(size=(8, OBS_SIZE)), rng.normal(size=8), "tanh"),
        (rng.normal(size=(6, 8)), rng.normal(size=6), "linear"),
    ]
    doc = bots.mlp_bot_document(layers, None, None, GameSettings(), 8, {"experiment": path.stem})
    bots.save_bot(path, doc)
    return path


def test_metadata_read_from_the_bytes_is_what_onnx_reads(tmp_path: Path) -> None:
    import onnx

    twin = write_onnx(mlp_bot(tmp_path / "a.json", 0))
    ours = metadata(twin.read_bytes())
    theirs = {p.key: p.value for p in onnx.load(str(twin)).metadata_props}
    assert ours == theirs and ours["source"] == "a.json"
    assert twin_problem(twin) is None


@pytest.mark.parametrize("data", [b"\xff\xff\xff", b"\x72\x10ab", b"\x0f", b"not protobuf at all"])
def test_bytes_that_are_not_protobuf_have_no_metadata(data: bytes) -> None:
    assert metadata(data) is None


def test_a_twin_of_other_bytes_or_of_nothing_is_named(tmp_path: Path) -> None:
    twin = write_onnx(mlp_bot(tmp_path / "a.json", 0))
    mlp_bot(tmp_path / "a.json", 1)  # the bot changed after its twin was written
    assert "written from another bot (a.json" in (twin_problem(twin) or "")
    (tmp_path / "a.json").unlink()
    assert "has no a.json beside it" in (twin_problem(twin) or "")
    junk = tmp_path / "b.onnx"
    junk.write_bytes(b"\x00\x01")
    (tmp_path / "b.json").write_text("{}")
    assert "no source_sha256" in (twin_problem(junk) or "")


@pytest.mark.slow
def test_a_stale_twin_is_left_out_of_the_commit_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = make_workspace(tmp_path / "ws", stages=["score"])
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    # A twin already there from another bot (an earlier workspace, a copied file).
    other = mlp_bot(tmp_path / "curric-s1-score.json", 3)
    stale = ws / "bots" / "curric-s1-score.onnx"
    stale.write_bytes(write_onnx(other, tmp_path / "curric-s1-score.onnx").read_bytes())
    rec = warnings_reporter()
    assert run_in_process(ws, rec).status == "done"
    tracked = git(ws, "ls-files", "bots").splitlines()
    assert "bots/curric-s1-score.json" in tracked
    assert "bots/curric-s1-score.onnx" not in tracked
    said = [w for w in rec.warnings if "curric-s1-score.onnx" in w]
    assert len(said) == 1 and "left out of the commit" in said[0]
    assert "export-onnx bots/curric-s1-score.json" in said[0]
    assert json.loads(git(ws, "show", "HEAD:curriculum_state.json"))["status"] == "done"
