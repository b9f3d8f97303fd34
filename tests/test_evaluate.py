"""The batched evaluator, its history records, replay pictures, the ladder and their CLI."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.bots import (
    bot_sha256,
    load_bot,
    mlp_bot_document,
    rookie_document,
    save_bot,
    simple_bot_document,
)
from cosmic_curriculum.cli import app
from cosmic_curriculum.errors import EvaluationError
from cosmic_curriculum.evaluation import evaluate, ladder
from cosmic_curriculum.evaluation.gate import GateSettings, decide
from cosmic_curriculum.workspace import history

# Short games keep these tests fast; outcomes still vary (goals and timeouts both occur).
FAST = GameSettings(time_limit=8.0)


def _mlp_document(seed: int, game: GameSettings) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    from cosmic_curriculum.arena.observations import OBS_SIZE

    sizes = [OBS_SIZE, 16, 6]
    layers = [
        (rng.normal(0, 0.5, (o, i)), rng.normal(0, 0.1, o), "tanh" if k == 0 else "linear")
        for k, (i, o) in enumerate(itertools.pairwise(sizes))
    ]
    return mlp_bot_document(
        layers, None, None, game, decision_ticks=8, provenance={"experiment": "test-mlp"}
    )


@pytest.fixture
def bots(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "rookie": tmp_path / "rookie.json",
        "random": tmp_path / "random.json",
        "inert": tmp_path / "inert.json",
        "mlp": tmp_path / "mlp.json",
    }
    save_bot(paths["rookie"], rookie_document())
    save_bot(paths["random"], simple_bot_document("random"))
    save_bot(paths["inert"], simple_bot_document("inert"))
    save_bot(paths["mlp"], _mlp_document(0, FAST))
    return paths


def test_record_format_and_history(bots: dict[str, Path], tmp_path: Path) -> None:
    hist = tmp_path / "eval_history.json"
    progress: list[tuple[int, int]] = []
    rec = evaluate.run_evaluation(
        bots["rookie"],
        bots["random"],
        history_path=hist,
        episodes=20,
        seed=3,
        game=FAST,
        on_progress=lambda done, total: progress.append((done, total)),
        extra={"stage_index": 0, "curriculum_experiment": "curric-s1-score"},
    )
    for key in (
        "id", "created_at", "wins_a", "wins_b", "draws", "episodes", "candidate",
        "reference", "candidate_sha256", "reference_sha256", "seed", "pairs", "score",
        "gap_ci95", "elo", "elo_ci95", "summary",
    ):  # fmt: skip
        assert key in rec, key
    assert rec["episodes"] == 20 == rec["wins_a"] + rec["wins_b"] + rec["draws"]
    assert len(rec["pairs"]) == 10
    flat = [o for pair in rec["pairs"] for o in pair]
    assert flat.count(1) == rec["wins_a"] and flat.count(-1) == rec["wins_b"]
    assert rec["candidate_sha256"] == bot_sha256(bots["rookie"])
    assert rec["seed"] == 3 and rec["stage_index"] == 0
    assert "gate" not in rec
    assert progress == [(20, 20)]
    stored = history.load(hist)
    assert len(stored) == 1 and stored[0] == rec
    assert history.find(hist, rec["id"]) == rec
    json.dumps(rec, allow_nan=False)
    # the summary states counts, gap and Elo
    assert rec["summary"].startswith(f"candidate {rec['wins_a']}–{rec['wins_b']} reference")


def test_same_seed_same_record_other_seed_other_kickoffs(
    bots: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cosmic_curriculum.arena import match

    seen: list[int] = []
    real = match.play_pairs

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(args[3])
        return real(*args, **kwargs)

    monkeypatch.setattr(match, "play_pairs", spy)

    def run(seed: int) -> dict[str, Any]:
        return evaluate.run_evaluation(
            bots["rookie"], bots["random"], history_path=tmp_path / "h.json", episodes=16,
            seed=seed,
        )  # fmt: skip

    a, b = run(7), run(7)
    assert a["pairs"] == b["pairs"] and a["id"] != b["id"]
    assert {k: v for k, v in a.items() if k not in ("id", "created_at", "seconds")} == {
        k: v for k, v in b.items() if k not in ("id", "created_at", "seconds")
    }
    run(8)
    assert seen[0] == seen[1] == evaluate.batch_seed(7, 0)
    assert seen[2] == evaluate.batch_seed(8, 0) != seen[0]
    assert len(history.load(tmp_path / "h.json")) == 3


def test_odd_episodes_and_bad_seed_are_clear_errors(bots: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(EvaluationError, match=r"--episodes=7: .*even.*use 8"):
        evaluate.run_evaluation(
            bots["rookie"], bots["inert"], history_path=tmp_path / "h.json", episodes=7
        )
    with pytest.raises(EvaluationError, match="seed=-1"):
        evaluate.run_evaluation(
            bots["rookie"], bots["inert"], history_path=tmp_path / "h.json", seed=-1
        )
    assert not (tmp_path / "h.json").exists()  # nothing recorded for a refused run


def test_margin_gate_records_its_verdict_and_matches_the_ungated_games(
    bots: dict[str, Path], tmp_path: Path
) -> None:
    gate = GateSettings(episodes=20)
    kw: dict[str, Any] = {"history_path": tmp_path / "h.json", "seed": 1, "game": FAST}
    gated = evaluate.run_evaluation(bots["rookie"], bots["inert"], gate=gate, **kw)
    plain = evaluate.run_evaluation(bots["rookie"], bots["inert"], episodes=20, **kw)
    assert gated["pairs"] == plain["pairs"]
    expected = decide(gate, gated["wins_a"], gated["wins_b"], gated["draws"])
    assert gated["gate"]["verdict"] == expected.verdict
    assert gated["gate"]["rule"] == "margin"
    assert gated["gate"]["settings"]["episodes"] == 20
    assert gated["summary"] == expected.summary


def test_sprt_stops_at_the_first_deciding_pair(bots: dict[str, Path], tmp_path: Path) -> None:
    gate = GateSettings(rule="sprt", batch_pairs=4)
    rec = evaluate.run_evaluation(
        bots["rookie"], bots["inert"], history_path=tmp_path / "h.json", gate=gate,
        seed=2, game=FAST,
    )  # fmt: skip
    assert rec["gate"]["verdict"] == "pass"  # rookie is far better than inert
    assert rec["episodes"] < gate.max_episodes
    assert rec["gate"]["stats"]["model"] == "pentanomial"
    assert rec["gate"]["stats"]["llr"] >= rec["gate"]["stats"]["llr_bounds"][1]
    # One pair fewer and the test had not decided yet.
    pairs = rec["pairs"][:-1]
    flat = [o for p in pairs for o in p]
    scores = [((a + 1) / 2 + (b + 1) / 2) / 2 for a, b in pairs]
    before = decide(gate, flat.count(1), flat.count(-1), flat.count(0), scores)
    assert before.verdict == "continue"
    played = 4 * rec["batches"]
    assert rec["discarded_pairs"] == played - len(rec["pairs"])
    assert len(rec["discarded_pair_outcomes"]) == rec["discarded_pairs"]
    assert 0 <= rec["discarded_pairs"] < 4


def test_sprt_cap_from_episodes_and_batch_checking(bots: dict[str, Path], tmp_path: Path) -> None:
    gate = GateSettings(rule="sprt", batch_pairs=3, check="batch")
    rec = evaluate.run_evaluation(
        bots["random"], bots["inert"], history_path=tmp_path / "h.json", gate=gate,
        episodes=12, seed=0, game=FAST,
    )  # fmt: skip
    assert rec["episodes"] <= 12
    assert rec["episodes"] % 6 == 0  # whole batches only
    assert rec["discarded_pairs"] == 0
    assert rec["gate"]["verdict"] in ("pass", "fail")


def test_evaluation_plays_under_the_candidates_game(bots: dict[str, Path], tmp_path: Path) -> None:
    planar = GameSettings(allow_vertical=False, allow_pitch_roll=False, time_limit=5.0)
    path = tmp_path / "planar.json"
    save_bot(path, _mlp_document(1, planar))
    assert evaluate.game_for(load_bot(path)) == planar
    assert evaluate.game_for(load_bot(bots["rookie"])) == GameSettings()
    rec = evaluate.run_evaluation(
        path, bots["rookie"], history_path=tmp_path / "h.json", episodes=4
    )
    assert rec["game"]["allow_vertical"] is False
    assert rec["game"]["time_limit"] == 5.0
    assert rec["candidate_decision_ticks"] == 8
    assert rec["reference_decision_ticks"] == load_bot(bots["rookie"]).decision_ticks


def test_batch_seeds_are_distinct_and_stable() -> None:
    seeds = {evaluate.batch_seed(0, k) for k in range(100)}
    assert len(seeds) == 100
    assert evaluate.batch_seed(5, 2) == evaluate.batch_seed(5, 2)
    assert evaluate.batch_seed(5, 2) != evaluate.batch_seed(2, 5)


@pytest.mark.slow
def test_replay_png_and_gif(bots: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "match.png"
    info = evaluate.render_replay(bots["rookie"], bots["random"], out, seed=1, game=FAST)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 20_000  # a real picture, not an empty canvas
    assert info["outcome"] in (-1, 0, 1) and 0 < info["seconds"] <= 8.0
    gif = tmp_path / "match.gif"
    evaluate.render_replay(bots["rookie"], bots["random"], gif, game=FAST, max_gif_frames=4)
    assert gif.read_bytes()[:6] in (b"GIF89a", b"GIF87a")
    with pytest.raises(EvaluationError, match=r"\.jpg"):
        evaluate.render_replay(bots["rookie"], bots["random"], tmp_path / "m.jpg")


def test_fit_elo_two_bots_matches_the_closed_form() -> None:
    # One pairing: the MLE equates the expected and actual score (plus the virtual draw).
    games = np.array([[0, 40], [40, 0]], dtype=float)
    points = np.array([[30, 0], [10, 0]], dtype=float)
    points[1, 0] = 10
    fit = ladder.fit_elo(games, points, ["a", "rookie"])
    s = (30 + 0.5) / 41
    assert fit.anchor == "rookie"
    assert fit.ratings[1] == 0.0
    assert fit.ratings[0] == pytest.approx(-400 * math.log10(1 / s - 1), abs=1e-6)
    # error from the Fisher information of 41 games: 1.96 / sqrt(n p (1-p)) / (ln10/400)
    se = 1 / math.sqrt(41 * s * (1 - s)) / (math.log(10) / 400)
    assert fit.err95[0] == pytest.approx(1.959964 * se, rel=1e-6)


def test_fit_elo_sweep_is_finite_and_ordered() -> None:
    games = np.array([[0, 20, 20], [20, 0, 20], [20, 20, 0]], dtype=float)
    points = np.array([[0, 20, 20], [0, 0, 15], [0, 5, 0]], dtype=float)
    fit = ladder.fit_elo(games, points, ["top", "mid", "low"])
    assert fit.anchor is None
    assert np.all(np.isfinite(fit.ratings)) and fit.ratings.sum() == pytest.approx(0, abs=1e-6)
    assert fit.ratings[0] > fit.ratings[1] > fit.ratings[2]


def test_ladder_writes_table_png_and_json(bots: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    (bots["mlp"]).unlink()
    doc = ladder.run_ladder(tmp_path, pairs=3, out_dir=tmp_path / "logs", seed=0)
    assert [r["bot"] for r in doc["ratings"]].count("rookie") == 1
    assert doc["anchor"] == "rookie"
    assert len(doc["skipped"]) == 1 and "broken.json" in doc["skipped"][0]["reason"]
    for f in ("ladder.json", "ladder.md", "ladder.png"):
        assert (tmp_path / "logs" / f).stat().st_size > 0
    assert all(r["games"] == 12 for r in doc["ratings"])  # 2 opponents x 3 pairs x 2
    with pytest.raises(EvaluationError, match="at least 2"):
        ladder.run_ladder(tmp_path / "logs", pairs=1, out_dir=tmp_path / "x")


# --- CLI -------------------------------------------------------------------------------

runner = CliRunner()


def test_cli_evaluate_prints_summary_and_record_id(bots: dict[str, Path], tmp_path: Path) -> None:
    hist = tmp_path / "h.json"
    args = ["evaluate", str(bots["rookie"]), str(bots["inert"]), "--episodes", "6"]
    result = runner.invoke(app, [*args, "--history", str(hist), "--gate", "margin"])
    assert result.exit_code == 0, result.output
    rec = history.load(hist)[0]
    assert rec["id"] in result.output
    assert "gap" in result.output and "Elo" in result.output
    assert rec["gate"]["verdict"] in result.output


def test_cli_evaluate_errors_are_one_line(bots: dict[str, Path], tmp_path: Path) -> None:
    base = ["evaluate", str(bots["rookie"]), str(bots["inert"]), "--history", str(tmp_path / "h")]
    odd = runner.invoke(app, [*base, "--episodes", "5"])
    assert odd.exit_code == 1
    assert odd.output.strip().count("\n") == 0 and "even" in odd.output
    bad_gate = runner.invoke(app, [*base, "--gate", "vibes"])
    assert bad_gate.exit_code == 2 and "margin or sprt" in bad_gate.output
    missing = runner.invoke(app, ["evaluate", str(tmp_path / "nope.json"), str(bots["inert"])])
    assert missing.exit_code == 1 and "not found" in missing.output
    # a game's built-in references need a candidate that names its game: not a file name
    for pair in ([str(bots["rookie"]), "search:2"], ["exec:./mine", "random"]):
        builtin = runner.invoke(app, ["evaluate", *pair, "--history", str(tmp_path / "h")])
        assert builtin.exit_code == 2 and builtin.output.strip().count("\n") == 0
        assert f"{pair[1]} is a built-in reference of games and envs" in builtin.output
        assert "evaluate BOT exec:./program" in builtin.output


def test_cli_replay_and_ladder(bots: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "r.png"
    result = runner.invoke(
        app, ["replay", str(bots["rookie"]), str(bots["inert"]), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert out.exists() and "wrote" in result.output
    (bots["mlp"]).unlink()
    result = runner.invoke(
        app,
        ["ladder", "--bots-dir", str(tmp_path), "--pairs", "2", "--out-dir", str(tmp_path / "l")],
    )
    assert result.exit_code == 0, result.output
    assert "rookie" in result.output and (tmp_path / "l" / "ladder.png").exists()


def test_plan_for_preflight() -> None:
    assert evaluate.plan(None) == (50, 50)
    assert evaluate.plan(GateSettings(episodes=40)) == (20, 20)
    assert evaluate.plan(GateSettings(rule="sprt")) == (200, 5)
    assert evaluate.plan(GateSettings(rule="sprt", batch_pairs=8), episodes=10) == (5, 5)
    with pytest.raises(EvaluationError, match="gate episodes=25"):
        evaluate.plan(GateSettings(episodes=25))
    with pytest.raises(EvaluationError, match="gate max_episodes=401"):
        evaluate.plan(GateSettings(rule="sprt", max_episodes=401))


@pytest.mark.slow
def test_a_bot_file_name_that_is_not_utf8_is_stored_as_text_utf8_can_hold(
    bots: dict[str, Path], tmp_path: Path
) -> None:
    """`evaluate` once stored the name's lone surrogate, which every reader that writes
    the record out as UTF-8 (export, REPORT, a terminal) then failed on."""
    import os
    import shutil

    odd = Path(os.fsdecode(bytes(tmp_path) + b"/m\xffp.json"))
    shutil.copyfile(bots["mlp"], odd)
    path = tmp_path / "eval_history.json"
    result = CliRunner().invoke(
        app, ["evaluate", str(odd), str(bots["inert"]), "-n", "2", "--history", str(path)]
    )
    assert result.exit_code == 0, result.output
    text = path.read_text(encoding="utf-8")
    assert "\\udc" not in text  # no surrogate, not even as a JSON escape
    (record,) = history.load(path)
    assert record["candidate"] == f"{tmp_path}/m\\xffp.json"
    record["candidate"].encode("utf-8")  # every string is UTF-8 text now
    assert record["candidate_sha256"] == history.load(path)[0]["candidate_sha256"]


def test_json_we_write_never_holds_a_lone_surrogate(tmp_path: Path) -> None:
    from cosmic_curriculum.system import fsio

    value = {"a\udcff": ["x\udcfe", {"k": "\ud800"}], "ok": "😀 é"}
    text = fsio.dumps_json(value)
    assert json.loads(text) == {"a\\xff": ["x\\xfe", {"k": "\\ud800"}], "ok": "😀 é"}
    assert fsio.dumps_json({"ok": "😀 é"}) == json.dumps({"ok": "😀 é"}, indent=2) + "\n"
    fsio.atomic_write_text(tmp_path / "t.md", "r\udcffk")
    assert (tmp_path / "t.md").read_text(encoding="utf-8") == "r\\xffk"
