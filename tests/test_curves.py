"""Learning curves from progress lines: parsing logs, one experiment, the whole curriculum."""

from __future__ import annotations

import os
from pathlib import Path

from cosmic_curriculum.progress import format_progress
from cosmic_curriculum.reports import curves

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def write_log(path: Path, points: list[tuple[int, float, float]], total: int) -> None:
    lines = ["starting\n", "some warning: not a progress line\n", "@progress {broken\n"]
    for steps, reward, win in points:
        lines.append(
            format_progress(timesteps=steps, total=total, fps=1000.0, reward=reward, win_rate=win)
            + "\n"
        )
    lines.append("trained\n")
    path.write_text("".join(lines), encoding="utf-8")


def test_read_progress_keeps_only_valid_lines_in_order(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    write_log(log, [(100, 0.1, 0.0), (200, 0.2, 0.5)], 300)
    with open(log, "a", encoding="utf-8") as fh:
        # a prefix added by some log writer is tolerated
        fh.write("[12:00:01] " + format_progress(timesteps=300, total=300, reward=0.3) + "\n")
    rows = curves.read_progress(log)
    assert [r["timesteps"] for r in rows] == [100, 200, 300]
    assert rows[1]["win_rate"] == 0.5
    assert "win_rate" not in rows[2]


def test_plot_experiment_writes_a_png(tmp_path: Path) -> None:
    out = tmp_path / "logs" / "x.curve.png"
    rows = [{"timesteps": t, "total": 3, "reward": t / 3, "win_rate": t / 4} for t in (1, 2, 3)]
    assert curves.plot_experiment(rows, out, title="x") == out
    assert out.read_bytes().startswith(PNG_MAGIC)
    # no temp files left next to it
    assert [p.name for p in out.parent.iterdir()] == ["x.curve.png"]


def test_plot_experiment_tolerates_missing_fields(tmp_path: Path) -> None:
    out = tmp_path / "y.png"
    curves.plot_experiment([{"timesteps": 5, "total": 10}], out)
    assert out.read_bytes().startswith(PNG_MAGIC)


def test_plot_curriculum_orders_by_stage_and_skips_logs_without_progress(
    tmp_path: Path,
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    write_log(logs / "curric-s2-defend.log", [(10, 0.5, 0.5)], 10)
    write_log(logs / "curric-s1-score.log", [(10, 0.1, 0.2), (20, 0.3, 0.6)], 20)
    (logs / "orchestrator.log").write_text("no progress here\n", encoding="utf-8")
    # s1's log is newer, but stage order wins over modification time
    os.utime(logs / "curric-s1-score.log", (2e9, 2e9))
    assert [p.stem for p in sorted(logs.glob("*.log"), key=curves._stage_key)][:2] == [
        "curric-s1-score",
        "curric-s2-defend",
    ]
    out = tmp_path / "curriculum.png"
    assert curves.plot_curriculum(logs, out) == out
    assert out.read_bytes().startswith(PNG_MAGIC)


def test_plot_curriculum_without_any_progress_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("hello\n", encoding="utf-8")
    out = tmp_path / "c.png"
    assert curves.plot_curriculum(tmp_path, out) is None
    assert not out.exists()
