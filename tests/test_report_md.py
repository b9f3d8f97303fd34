"""REPORT.md committed after every decision, its pictures, and `report`'s HTML page."""

from __future__ import annotations

import base64
import io
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fakes.workspace import cli_env, fake_env, make_workspace, run_in_process, warnings_reporter
from gitutil import git
from PIL import Image

from cosmic_curriculum.errors import BlockedError
from cosmic_curriculum.reports.summary import ladder
from cosmic_curriculum.workspace.config_file import load_config
from cosmic_curriculum.workspace.state import CurriculumState, LogEntry

IMAGE = re.compile(r"!\[[^\]]*\]\(([^)]+)\)")
LIMIT = 200_000


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = make_workspace(
        tmp_path / "ws", stages=["score", "defend"], eval_script={"curric-s1-score": "fail"}
    )
    for key, value in fake_env(path).items():
        monkeypatch.setenv(key, value)
    return path


def committed_pictures(ws: Path, report: str) -> list[str]:
    """The report's image links, each a committed PNG of at most 200 kB."""
    links = IMAGE.findall(report)
    for link in links:
        assert not link.startswith(("/", "http")) and ".." not in link  # relative, inside
        blob = subprocess.run(
            ["git", "show", f"HEAD:{link}"], cwd=ws, capture_output=True, check=True
        ).stdout
        assert 0 < len(blob) <= LIMIT, (link, len(blob))
        with Image.open(io.BytesIO(blob)) as image:
            assert image.format == "PNG" and image.size[0] > 100
    return links


@pytest.mark.slow
def test_a_finished_curriculum_commits_its_report_with_pictures(ws: Path) -> None:
    assert run_in_process(ws).status == "done"
    report = git(ws, "show", "HEAD:REPORT.md")
    assert report + "\n" == (ws / "REPORT.md").read_text()
    assert committed_pictures(ws, report) == ["logs/report/curves.png", "logs/report/ladder.png"]
    rows = [line for line in report.splitlines() if line.startswith("| ")]
    assert "W-L-D / N" in rows[0] and "Elo ± 95%" in rows[0] and "timesteps" in rows[0]
    attempts = [r.split(" | ")[1] for r in rows[1:4]]
    assert attempts == ["`curric-s1-score`", "`curric-s1-score-retry1`", "`curric-s2-defend`"]
    first = rows[1].split(" | ")
    assert first[3] == "2-10-8 / 20" and first[7] == "fail" and first[10] == "400 |"
    assert re.fullmatch(r"[−+]\d\.\d\d ± \d\.\d\d", first[5]) and " ± " in first[6]
    assert "Every stage passed" in report
    # Every decision committed its report: the first commit shows the failed attempt.
    first_commit = git(ws, "rev-list", "--reverse", "HEAD").splitlines()[1]
    early = git(ws, "show", f"{first_commit}:REPORT.md")
    assert "curric-s1-score-retry1` runs next" in early
    assert "`curric-s1-score` | 0 | 2-10-8 / 20" in early


@pytest.mark.slow
def test_a_blocked_report_says_what_to_decide(ws: Path) -> None:
    (ws.parent / "ws-scripts" / "eval.json").write_text('{"*": "fail"}')
    with pytest.raises(BlockedError):
        run_in_process(ws)
    report = (ws / "REPORT.md").read_text()
    assert "**Stage 1 `score` is blocked**" in report
    assert (
        "[the review](logs/review-score.md)" in report and (ws / "logs/review-score.md").is_file()
    )
    assert '    cosmic-curriculum run --force-retry --reason "..."' in report
    assert '    cosmic-curriculum run --skip-to-next-stage --reason "..."' in report
    assert git(ws, "status", "--porcelain", "REPORT.md", "logs/report") == ""  # committed


@pytest.mark.slow
def test_a_picture_that_cannot_be_drawn_is_a_warning(ws: Path) -> None:
    (ws / "logs").mkdir()
    (ws / "logs" / "report").write_text("not a directory\n")
    rec = warnings_reporter()
    assert run_in_process(ws, rec).status == "done"
    assert any("could not draw the report's pictures" in w for w in rec.warnings)
    report = git(ws, "show", "HEAD:REPORT.md")
    assert "Every stage passed" in report and IMAGE.findall(report) == []


@pytest.mark.slow
def test_the_html_page_is_self_contained(ws: Path, tmp_path: Path) -> None:
    run_in_process(ws)
    out = tmp_path / "page.html"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "cosmic_curriculum",
            "report",
            "--workspace",
            str(ws),
            "--out",
            str(out),
        ],
        env=cli_env(ws),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"report: {out}"
    page = out.read_text()
    sources = re.findall(r'src="([^"]*)"', page)
    assert len(sources) == 2 and all(s.startswith("data:image/png;base64,") for s in sources)
    for source in sources:
        with Image.open(io.BytesIO(base64.b64decode(source.split(",", 1)[1]))) as image:
            assert image.format == "PNG"
    assert "<code>curric-s1-score-retry1</code>" in page and "Every stage passed" in page
    assert not re.search(r'(src|href)="(?!data:)[^"#]*\.(png|css|js)"', page)


def report(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "cosmic_curriculum", "report", "--workspace", str(ws), *args]
    return subprocess.run(argv, env=cli_env(ws), capture_output=True, text=True, timeout=120)


def files_in(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted(ws.rglob("*")) if p.is_file()}


def test_the_html_page_waits_for_the_workspace_lock(ws: Path) -> None:
    """`report` writes into the workspace, so it holds its lock like `evaluate`: behind
    another holder (a `run`) it gives up after --lock-wait with one line, writing nothing."""
    code = (
        "import sys; from cosmic_curriculum.workspace.lock import WorkspaceLock; "
        "WorkspaceLock(sys.argv[1]).acquire(); print('ready', flush=True); sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(ws)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=cli_env(ws),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        before = files_in(ws)
        started = time.monotonic()
        blocked = report(ws, "--lock-wait", "1")
        waited = time.monotonic() - started
        after = files_in(ws)
    finally:
        holder.kill()
        holder.wait()
    assert blocked.returncode == 1, blocked.stderr
    line = blocked.stderr.strip()
    assert line.startswith("error: ") and "\n" not in line and "Traceback" not in line, line
    assert f"{ws.resolve()}: another cosmic-curriculum process holds this workspace" in line
    assert f"held by pid {holder.pid} (" in line and "within 1s" in line, line
    assert 1 <= waited < 60
    assert blocked.stdout == "" and after == before  # no page, no temp file, nothing touched
    assert not (ws / "REPORT.html").exists()
    # The holder is gone: the lock is free and the page is written.
    done = report(ws, "--lock-wait", "1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"report: {ws.resolve() / 'REPORT.html'}"
    assert "</html>" in (ws / "REPORT.html").read_text()


def test_the_ladder_chains_elo_through_the_records_and_stops_at_a_skip(tmp_path: Path) -> None:
    toml = tmp_path / "stages.toml"
    toml.write_text("".join(f'[[stages]]\nname = "{n}"\n' for n in ("a", "b", "c")))
    config = load_config(toml)
    entries: list[dict[str, Any]] = [
        {"experiment": "curric-s1-a", "eval_id": "e1"},
        {"experiment": "curric-s2-b", "override": "skip_to_next_stage"},
        {"experiment": "curric-s3-c", "eval_id": "e3"},
    ]
    log = [LogEntry(stage_index=i, attempt=0, decision="pass", **e) for i, e in enumerate(entries)]
    records = {
        "e1": {"id": "e1", "wins_a": 6, "wins_b": 4, "draws": 0, "elo": 100.0, "elo_err95": 30.0},
        "e3": {"id": "e3", "wins_a": 6, "wins_b": 4, "draws": 0, "elo": 50.0, "elo_err95": 40.0},
    }
    rungs = ladder(CurriculumState(log=log[:1]), config, records)
    assert [(r.bot, r.elo, r.err) for r in rungs] == [
        ("rookie", 0.0, 0.0),
        ("curric-s1-a", 100.0, 30.0),
    ]
    rungs = ladder(CurriculumState(log=log), config, records)
    assert [(r.elo, r.err) for r in rungs[2:]] == [(None, None), (None, None)]  # unknown
    two = ladder(
        CurriculumState(log=[log[0], log[2].model_copy(update={"stage_index": 1})]), config, records
    )
    assert two[2].elo == 150.0 and two[2].err == pytest.approx(50.0)  # errors add in quadrature
