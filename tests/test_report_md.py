"""REPORT.md committed after every decision, its pictures, and `report`'s HTML page."""

from __future__ import annotations

import base64
import io
import json
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
from cosmic_curriculum.workspace.state_file import load_state

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


# --- text from files is inert in REPORT.md and the page -------------------------------

HOSTILE = (
    "[x](javascript:alert(1)) <img src=x onerror=alert(1)> \x1b[2J\x1b]0;owned\x07 "
    "**b** `c` a|b\nline2"
)


def hostile_workspace(tmp_path: Path, blocked: bool) -> Path:
    from cosmic_curriculum.workspace.state_file import save_state

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "stages.toml").write_text(
        'reference_bot = {exec = ["python3", "-c", "`<b>x</b>` [y](javascript:z)"]}\n'
        '[[stages]]\nname = "score"\n[[stages]]\nname = "defend"\n'
    )
    log = [
        LogEntry(
            stage_index=0,
            attempt=0,
            experiment="curric-s1-score",
            decision="pass",
            override="skip_to_next_stage",
            reason=HOSTILE,
        )
    ]
    extra: dict[str, Any] = {"status": "blocked", "blocked_reason": HOSTILE} if blocked else {}
    save_state(ws / "curriculum_state.json", CurriculumState(stage_index=1, log=log, **extra))
    return ws


@pytest.mark.parametrize("blocked", [False, True])
def test_reasons_and_labels_from_files_are_inert_in_the_report(
    tmp_path: Path, blocked: bool
) -> None:
    from cosmic_curriculum.reports.markdown import html_report, write_report
    from cosmic_curriculum.workspace.layout import Layout

    ws = hostile_workspace(tmp_path, blocked)
    layout = Layout(ws)
    write_report(layout, load_state(layout.state), load_config(layout.config))
    md = (ws / "REPORT.md").read_text()
    # no raw HTML, no control byte, no link that is not ours, in the committed file
    assert "<img" not in md and "<b>" not in md and "\x1b" not in md and "\x07" not in md
    assert "](javascript:" not in md.replace("\\](javascript:", "")
    assert "&lt;img src=x onerror=alert(1)&gt;" in md and "\\\\x1b\\[2J" in md
    assert all(not line.startswith("line2") for line in md.splitlines())  # one line each
    page = html_report(ws)
    assert "javascript:" not in re.sub(r">[^<]*<", "><", page)  # only in text, no attribute
    assert not re.search(r"<(img|b|script)\b(?! alt=\"(learning curves|Elo ladder)\")", page)
    assert "\x1b" not in page and "\x07" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "\\x1b[2J" in page
    assert "[x](javascript:alert(1))" in page  # shown as the text it was
    assert "**b** `c` a|b\\nline2" in page
    hrefs = re.findall(r'href="([^"]*)"', page)
    assert hrefs == (["logs/review-defend.md"] if blocked else []), hrefs


@pytest.mark.parametrize(
    ("href", "safe"),
    [
        ("logs/review-a.md", True),
        ("https://example.org/x", True),
        ("HTTP://example.org", True),
        ("javascript:alert(1)", False),
        ("JavaScript:alert(1)", False),
        ("java\tscript:alert(1)", False),
        (" javascript:x", False),
        ("data:text/html,<b>", False),
        ("vbscript:x", False),
        ("//evil.example/x", False),
        ("\\\\evil\\x", False),
        ("file:///etc/passwd", False),
        ("", False),
    ],
)
def test_only_http_and_relative_targets_are_links(href: str, safe: bool) -> None:
    from cosmic_curriculum.reports import md_text
    from cosmic_curriculum.reports.markdown import _inline

    assert md_text.safe_href(href) is safe
    html = _inline(f"[label]({href})")
    assert ("<a href" in html) is (safe and " " not in href and "\t" not in href)


@pytest.mark.parametrize(
    ("value", "markdown", "shown"),
    [
        ("plain reason", "plain reason", "plain reason"),
        ("<script>x</script>", "&lt;script&gt;x&lt;/script&gt;", "&lt;script&gt;x&lt;/script&gt;"),
        ("a & b", "a &amp; b", "a &amp; b"),
        ("[t](u)", "\\[t\\](u)", "[t](u)"),
        ("\x1b[31mred", "\\\\x1b\\[31mred", "\\x1b[31mred"),
        ("two\nlines", "two\\\\nlines", "two\\nlines"),
        ("back\\slash `tick`", "back\\\\slash \\`tick\\`", "back\\slash `tick`"),
        ("bidi \u202e", "bidi \\\\u202e", "bidi \\u202e"),
    ],
)
def test_text_from_files_reads_back_as_it_was(value: str, markdown: str, shown: str) -> None:
    from cosmic_curriculum.reports import md_text
    from cosmic_curriculum.reports.markdown import _inline

    assert md_text.text(value) == markdown
    assert _inline(md_text.text(value)) == shown


@pytest.mark.parametrize(
    ("study", "shown"),
    [
        ({"verdict": ["2 against 2 seeds cannot show a *difference*"]}, True),
        ({"verdict": "not a list"}, False),
        ("[1, 2", False),  # a torn file: no section, and no failure either
        (None, False),
    ],
)
def test_the_report_names_a_compare_study_and_its_verdict(
    ws: Path, study: Any, shown: bool
) -> None:
    from cosmic_curriculum.reports.markdown import write_report
    from cosmic_curriculum.workspace.layout import Layout

    if study is not None:
        (ws / "compare").mkdir()
        text = study if isinstance(study, str) else json.dumps(study)
        (ws / "compare" / "compare.json").write_text(text)
    layout = Layout(ws)
    write_report(layout, load_state(layout.state), load_config(layout.config))
    report = (ws / "REPORT.md").read_text()
    assert ("## Does the curriculum pay? (`compare`)" in report) is shown
    if shown:  # the verdict is inert text: a file's asterisks are not emphasis
        assert "`compare/REPORT.md`" in report and r"cannot show a \*difference\*" in report
