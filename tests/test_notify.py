"""notify_command: the shipped webhook example against a real local HTTP server, and a
notifier that is missing, fails, hangs or outlives the run's lock: the run goes on and
what did not get through is sent by the next run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fakes.waiting import alive
from fakes.workspace import (
    cli_env,
    fake_env,
    make_workspace,
    read_state,
    run_argv,
    run_in_process,
    warnings_reporter,
)
from gitutil import git

from cosmic_curriculum.errors import BlockedError, TrainerError

REPO = Path(__file__).resolve().parent.parent
WEBHOOK = REPO / "examples" / "notify" / "webhook.sh"
WEBHOOK_LINE = f"notify_command = [{json.dumps(str(WEBHOOK))}]"


@pytest.fixture
def hook(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """A webhook on 127.0.0.1 (a free port) collecting the JSON bodies POSTed to it."""
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append({"path": self.path, "json": json.loads(body)})
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("COSMIC_WEBHOOK_URL", f"http://127.0.0.1:{server.server_port}/hook")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    yield received
    server.shutdown()
    server.server_close()


def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, notify: str, **kw: Any) -> Path:
    """A fake-trainer workspace whose stages.toml starts with the ``notify`` lines."""
    ws = make_workspace(tmp_path / "ws", **kw)
    toml = ws / "stages.toml"
    toml.write_text(notify + "\n" + toml.read_text())
    git(ws, "commit", "-qam", "notify")
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    return ws


def recorder(tmp_path: Path, body: str = "") -> str:
    """A notifier appending what it got (stdin, COSMIC_* variables, its open descriptors)
    to notified.jsonl, then running ``body``; its notify_command line."""
    script = tmp_path / "notifier.py"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys, time\n"
        "fds = {}\n"
        "for fd in os.listdir('/proc/self/fd'):\n"
        "    try: fds[fd] = os.readlink(f'/proc/self/fd/{fd}')\n"
        "    except OSError: pass\n"
        "note = json.loads(sys.stdin.read())\n"
        "env = {k: v for k, v in os.environ.items() if k.startswith('COSMIC_')}\n"
        f"with open({str(tmp_path / 'notified.jsonl')!r}, 'a') as fh:\n"
        "    fh.write(json.dumps({'note': note, 'env': env, 'fds': fds}) + '\\n')\n"
        f"{body}\n"
    )
    script.chmod(0o755)
    return f"notify_command = [{json.dumps(str(script))}]"


def notified(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "notified.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_webhook_example_posts_the_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hook: list[dict[str, Any]]
) -> None:
    fail = {"*": "fail"}
    ws = workspace(
        tmp_path, monkeypatch, WEBHOOK_LINE, stages=["score"], max_retries=0, eval_script=fail
    )
    with pytest.raises(BlockedError):
        run_in_process(ws)
    assert len(hook) == 1 and hook[0]["path"] == "/hook"
    body = hook[0]["json"]
    assert body["text"] == body["content"] and body["text"].startswith("[blocked] ws: ")
    event = body["event"]
    assert (event["event"], event["stage"], event["stage_name"], event["experiment"]) == (
        "blocked",
        1,
        "score",
        "curric-s1-score",
    )
    assert event["workspace"] == str(ws.resolve()) and event["review"] == "logs/review-score.md"
    assert "--force-retry" in event["next"] and "--skip-to-next-stage" in event["next"]
    decision = event["decision"]
    assert decision["decision"] == "fail" and decision["wins_b"] > decision["wins_a"]
    assert decision["summary"]
    state = read_state(ws)
    assert "notify_outbox" not in state  # delivered: nothing left to retry
    assert "notify_outbox" not in json.loads(git(ws, "show", "HEAD:curriculum_state.json"))


@pytest.mark.slow
def test_webhook_example_posts_done_once_with_the_gates_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hook: list[dict[str, Any]]
) -> None:
    ws = workspace(tmp_path, monkeypatch, WEBHOOK_LINE, stages=["score", "defend"])
    history = ws / "eval_history.json"
    assert run_in_process(ws).status == "done"
    assert [h["json"]["event"]["event"] for h in hook] == ["done"]
    event = hook[0]["json"]["event"]
    assert (event["stage"], event["experiment"], event["review"]) == (2, "curric-s2-defend", None)
    assert event["decision"]["decision"] == "pass" and event["next"].startswith("nothing")
    assert json.loads(history.read_text())[-1]["wins_a"] == event["decision"]["wins_a"]
    run_in_process(ws)  # a finished curriculum tells nobody again
    assert len(hook) == 1


@pytest.mark.slow
def test_every_asked_event_reaches_the_notifier_without_our_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(
        tmp_path,
        monkeypatch,
        recorder(tmp_path) + '\nnotify_on = ["passed", "failed", "done"]',
        stages=["score"],
        eval_script={"curric-s1-score": "fail"},
    )
    assert run_in_process(ws).status == "done"
    got = notified(tmp_path)
    assert [(g["note"]["event"], g["note"]["experiment"]) for g in got] == [
        ("failed", "curric-s1-score"),
        ("done", "curric-s1-score-retry1"),
    ]
    env = got[0]["env"]
    assert env["COSMIC_EVENT"] == "failed" and env["COSMIC_STAGE"] == "1"
    assert env["COSMIC_EXPERIMENT"] == "curric-s1-score" and env["COSMIC_STAGE_NAME"] == "score"
    assert env["COSMIC_WORKSPACE"] == str(ws.resolve()) and env["COSMIC_NEXT"]
    for g in got:  # nothing of ours is inherited: not the lock, not a log
        assert not [p for p in g["fds"].values() if str(ws.resolve()) in p], g["fds"]


def test_a_notifier_whose_program_went_missing_is_a_warning_and_the_next_run_sends_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A missing notify_command is refused at preflight; one that starts but whose own
    # program is gone when a note is due fails then: a warning, the note kept.
    line = 'notify_command = ["/bin/sh", "-c", "exec ./notify.sh"]'
    ws = workspace(tmp_path, monkeypatch, line, stages=["score"])
    rec = warnings_reporter()
    assert run_in_process(ws, rec).status == "done"
    assert any("notify_command /bin/sh exited with status 127" in w for w in rec.warnings)
    outbox = read_state(ws)["notify_outbox"]
    assert [n["event"] for n in outbox] == ["done"]
    committed = json.loads(git(ws, "show", "HEAD:curriculum_state.json"))
    assert committed["notify_outbox"] == outbox  # the commit carries what is still owed
    line = recorder(tmp_path)
    (ws / "notify.sh").symlink_to(json.loads(line.split("=", 1)[1])[0])
    rec = warnings_reporter()
    assert run_in_process(ws, rec).status == "done"
    assert [g["note"] for g in notified(tmp_path)] == outbox and not rec.warnings
    assert "notify_outbox" not in read_state(ws)


def test_a_failing_notifier_is_a_warning_with_its_last_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    line = recorder(tmp_path, "print('webhook said 403', file=sys.stderr); sys.exit(3)")
    ws = workspace(tmp_path, monkeypatch, line, trainer_script={"*": {"mode": "fail"}})
    rec = warnings_reporter()
    with pytest.raises(TrainerError):
        run_in_process(ws, rec)
    note = notified(tmp_path)[0]["note"]
    assert note["event"] == "attempt_error" and "exited with status 3" in note["error"]
    assert any("exited with status 3: webhook said 403" in w for w in rec.warnings)
    assert [n["event"] for n in read_state(ws)["notify_outbox"]] == ["attempt_error"]


@pytest.mark.slow
def test_a_hanging_notifier_is_killed_with_its_group_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = tmp_path / "pids"
    line = recorder(
        tmp_path,
        "import subprocess\n"
        "child = subprocess.Popen(['sleep', '300'])\n"
        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
        "time.sleep(300)",
    )
    ws = workspace(tmp_path, monkeypatch, line + "\nnotify_timeout = 1", stages=["score"])
    rec = warnings_reporter()
    started = time.monotonic()
    assert run_in_process(ws, rec).status == "done"
    assert time.monotonic() - started < 60
    assert any("did not finish within notify_timeout = 1 s" in w for w in rec.warnings)
    for pid in map(int, pids.read_text().split()):
        assert not alive(pid)  # the notifier and its child: gone
    assert [n["event"] for n in read_state(ws)["notify_outbox"]] == ["done"]


def test_an_interrupted_run_tells_the_notifier(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(
        tmp_path, monkeypatch, recorder(tmp_path), trainer_script={"*": {"mode": "hang"}}
    )
    proc = subprocess.Popen(run_argv(ws), env=cli_env(ws), stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not (ws / "fake_runs.jsonl").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 128 + signal.SIGTERM
    note = notified(tmp_path)[0]["note"]
    assert (note["event"], note["experiment"]) == ("interrupted", "curric-s1-score")
    assert "SIGTERM" in note["error"] and "resumes" in note["next"]
    assert "notify_outbox" not in read_state(ws)
