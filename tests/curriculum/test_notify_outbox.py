"""The outbox and its notifiers: the shipped webhook builds its JSON with an encoder (a
real HTTP server that accepts only valid JSON), a note refused for good is dropped and
the others go on, one that keeps failing leaves after a bounded number of tries, and a
chatty notifier's output is kept only as a tail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fakes.workspace import fake_env, make_workspace, read_state, run_cli, run_in_process
from fakes.workspace import warnings_reporter as recorder
from gitutil import git

from cosmic_curriculum.defaults import NOTIFY_MAX_TRIES, NOTIFY_REFUSED_EXIT
from cosmic_curriculum.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
WEBHOOK = REPO / "examples" / "notify" / "webhook.sh"
NASTY = 'a "quote", a \\ backslash, \x01\x07\x1b[2J\x7f, a\nline break, \u2028 and ünïcode'


class StrictHook:
    """A webhook on 127.0.0.1 that answers 400 to a body that is not JSON, else
    ``status`` (200 by default), and keeps what it parsed."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.status = 200
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                try:
                    parsed = json.loads(body)
                except ValueError:
                    code = 400
                else:
                    hook.received.append(parsed)
                    code = hook.status
                self.send_response(code)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"


@pytest.fixture
def strict_hook() -> Iterator[StrictHook]:
    hook = StrictHook()
    thread = threading.Thread(target=hook.server.serve_forever, daemon=True)
    thread.start()
    yield hook
    hook.server.shutdown()
    hook.server.server_close()


def post(hook: StrictHook, note: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """The shipped webhook run as the run runs it: the note on stdin, COSMIC_* set."""
    env = {
        **os.environ,
        "COSMIC_WEBHOOK_URL": hook.url,
        "NO_PROXY": "127.0.0.1",
        "no_proxy": "127.0.0.1",
        "COSMIC_EVENT": str(note["event"]),
        "COSMIC_WORKSPACE": str(note["workspace"]),
        "COSMIC_MESSAGE": str(note["message"]),
        "COSMIC_NEXT": str(note["next"]),
    }
    return subprocess.run(
        [str(WEBHOOK)], input=json.dumps(note), env=env, capture_output=True, text=True, timeout=60
    )


def note(event: str = "blocked", message: str = NASTY) -> dict[str, Any]:
    return {
        "id": f"{event}:x",
        "event": event,
        "workspace": "/w/ws",
        "message": message,
        "next": "review it",
    }


def test_the_webhook_example_posts_any_message_as_valid_json(strict_hook: StrictHook) -> None:
    result = post(strict_hook, note())
    assert result.returncode == 0, result.stderr
    (body,) = strict_hook.received
    assert body["event"]["message"] == NASTY  # every byte of it, through the encoder
    assert body["text"] == body["content"]
    assert body["text"].startswith('[blocked] ws: a "quote"') and "\n" not in body["text"]


@pytest.mark.parametrize(("status", "code"), [(400, NOTIFY_REFUSED_EXIT), (404, 65), (503, 75)])
def test_the_webhook_example_says_refused_for_good_or_for_now(
    strict_hook: StrictHook, status: int, code: int
) -> None:
    strict_hook.status = status
    result = post(strict_hook, note(message="plain"))
    assert result.returncode == code
    assert f"HTTP {status}" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def notifier(tmp_path: Path, body: str) -> str:
    """A notifier that runs ``body`` with ``note`` read from stdin, appending each note it
    delivers (exit 0) to delivered.jsonl; its notify_command line."""
    script = tmp_path / "notifier.py"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, stat, sys\n"
        "note = json.loads(sys.stdin.read())\n"
        f"{body}\n"
        f"with open({str(tmp_path / 'delivered.jsonl')!r}, 'a') as fh:\n"
        "    fh.write(json.dumps(note) + '\\n')\n"
    )
    script.chmod(0o755)
    return f"notify_command = [{json.dumps(str(script))}]"


def delivered(tmp_path: Path) -> list[str]:
    path = tmp_path / "delivered.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line)["id"] for line in lines]


def done_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, outbox: list[dict[str, Any]]
) -> Path:
    """A finished one-stage curriculum that still owes ``outbox``."""
    ws = make_workspace(tmp_path / "ws", stages=["score"])
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    toml = ws / "stages.toml"
    toml.write_text(line + "\n" + toml.read_text())
    assert run_in_process(ws).status == "done"
    state = read_state(ws)
    state["notify_outbox"] = outbox
    (ws / "curriculum_state.json").write_text(json.dumps(state, indent=2) + "\n")
    git(ws, "commit", "-qam", "owed notes")
    (tmp_path / "delivered.jsonl").unlink(missing_ok=True)  # the done note of the setup
    return ws


@pytest.mark.slow
def test_a_note_refused_for_good_is_dropped_and_the_next_ones_are_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refuse = f"if '\\x01' in note['message']: sys.exit({NOTIFY_REFUSED_EXIT})"
    owed = [note("attempt_error"), note("done", "curriculum done")]
    ws = done_workspace(tmp_path, monkeypatch, notifier(tmp_path, refuse), owed)
    rec = recorder()
    run_in_process(ws, rec)
    assert delivered(tmp_path) == ["done:x"]  # not held back by the refused one
    assert "notify_outbox" not in read_state(ws)
    assert any("refused this notification for good: dropped" in w for w in rec.warnings)


@pytest.mark.slow
def test_a_note_that_keeps_failing_leaves_after_a_bounded_number_of_tries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    down = "if note['event'] == 'attempt_error': sys.exit(1)"
    owed = [note("attempt_error", "boom"), note("done", "curriculum done")]
    ws = done_workspace(tmp_path, monkeypatch, notifier(tmp_path, down), owed)
    for n in range(1, NOTIFY_MAX_TRIES):
        rec = recorder()
        run_in_process(ws, rec)
        assert delivered(tmp_path) == []  # one failure ends the round: no timeout per note
        assert [x.get("tries") for x in read_state(ws)["notify_outbox"]] == [n, None]
        assert any(f"try {n} of {NOTIFY_MAX_TRIES}" in w for w in rec.warnings)
    rec = recorder()
    run_in_process(ws, rec)
    assert any(f"dropped after {NOTIFY_MAX_TRIES} tries" in w for w in rec.warnings)
    assert [x["id"] for x in read_state(ws)["notify_outbox"]] == ["done:x"]
    run_in_process(ws)  # the next round starts with the note that was behind it
    assert delivered(tmp_path) == ["done:x"]
    assert "notify_outbox" not in read_state(ws)


@pytest.mark.slow
def test_a_chatty_notifier_is_kept_as_a_tail_of_its_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chatty = (
        "chunk = b'x' * 65536 + b'\\n'\n"
        "for _ in range(800):\n"  # 50 MiB
        "    os.write(1, chunk)\n"
        "kept = os.fstat(1).st_size if stat.S_ISREG(os.fstat(1).st_mode) else 0\n"
        f"open({str(tmp_path / 'kept')!r}, 'w').write(str(kept))\n"
        "print('last words', flush=True)\n"
        "sys.exit(4)"
    )
    ws = done_workspace(tmp_path, monkeypatch, notifier(tmp_path, chatty), [note("done", "x")])
    rec = recorder()
    run_in_process(ws, rec)
    assert any("exited with status 4: last words" in w for w in rec.warnings), rec.warnings
    assert int((tmp_path / "kept").read_text()) < 1 << 20  # the run stored no 50 MiB file


@pytest.mark.parametrize(
    ("program", "says"),
    [
        ("./missing.sh", "does not exist in"),
        ("no-such-notifier-anywhere", "is not on PATH"),
        ("./plain.txt", "is not executable"),
        ("./adir/", "is a directory, not a program"),
        ("", "names an empty program ''"),
        ("   ", "names an empty program"),
        ("./noshebang", "has no '#!' line"),
    ],
)
def test_a_notify_command_that_cannot_start_is_one_line_at_preflight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, program: str, says: str
) -> None:
    ws = make_workspace(tmp_path / "ws", stages=["score"])
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    (ws / "plain.txt").write_text("hello\n")
    (ws / "adir").mkdir()
    (ws / "noshebang").write_text("echo hi\n")
    (ws / "noshebang").chmod(0o755)
    toml = ws / "stages.toml"
    toml.write_text(f"notify_command = [{json.dumps(program)}]\n" + toml.read_text())
    with pytest.raises(ConfigError) as caught:
        run_in_process(ws)
    message = str(caught.value)
    assert "\n" not in message and "notify_command" in message and says in message
    assert not (ws / "fake_runs.jsonl").exists()  # before any training


def test_the_cli_refuses_a_missing_notifier_with_exit_2(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", stages=["score"])
    toml = ws / "stages.toml"
    toml.write_text('notify_command = ["./notify.sh"]\n' + toml.read_text())
    result = run_cli(ws)
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and "notify_command './notify.sh' does not exist" in line
