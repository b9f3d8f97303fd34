"""Outputs the user names (`--out`, `--json`, a ladder's files): every command that writes
one goes through `workspace.outputs.write_output`. A device, a FIFO or `/dev/stdout` is
written in place (never replaced by a plain file), a failed write is reported, no
directory is created, a symlink is followed only within one workspace."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.bots import mlp_bot_document
from cosmic_curriculum.cli import app
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.system import fsio, output_files

REPO = Path(__file__).resolve().parents[2]
RECORD = {"wins_a": 3, "wins_b": 1, "draws": 0, "episodes": 4, "candidate": "bots/a.json"}


def device(tmp_path: Path, name: str, minor: int) -> Path:
    """A private twin of /dev/null (minor 3) or /dev/full (7) named ``name``: as root a
    real character device in tmp (a bug replaces our node, never the machine's); without
    CAP_MKNOD a symlink to the real one (an unprivileged rename cannot replace that)."""
    node = tmp_path / name
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    except PermissionError:
        assert os.geteuid() != 0
        node.symlink_to({3: "/dev/null", 7: "/dev/full"}[minor])
    return node


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    history = tmp_path / "eval_history.json"
    history.write_text(json.dumps([RECORD]))
    doc = mlp_bot_document(
        layers=[([[0.01] * OBS_SIZE] * ACT_SIZE, [0.0] * ACT_SIZE, "linear")],
        obs_mean=[0.0] * OBS_SIZE,
        obs_std=[1.0] * OBS_SIZE,
        game=GameSettings().model_dump(),
        decision_ticks=8,
        provenance={"experiment": "unit"},
    )
    bot = tmp_path / "mlp.json"
    bot.write_text(json.dumps(doc))
    bots = tmp_path / "bots"
    bots.mkdir()
    for name in ("inert", "random"):
        (bots / f"{name}.json").write_bytes((REPO / "bots" / f"{name}.json").read_bytes())
    return {"tmp": tmp_path, "history": history, "bot": bot, "bots": bots}


# Every command that writes a file the user names, and what a good write looks like.
def commands(p: dict[str, Path]) -> dict[str, Callable[[Path], list[str]]]:
    inert, rnd = str(p["bots"] / "inert.json"), str(p["bots"] / "random.json")
    return {
        "history-csv": lambda out: [
            "history",
            "export",
            "--history",
            str(p["history"]),
            "--out",
            str(out),
        ],
        "history-jsonl": lambda out: [
            "history",
            "export",
            "--history",
            str(p["history"]),
            "--format",
            "jsonl",
            "--out",
            str(out),
        ],
        "history-parquet": lambda out: [
            "history",
            "export",
            "--history",
            str(p["history"]),
            "--format",
            "parquet",
            "--out",
            str(out),
        ],
        "gate-json": lambda out: [
            "gate",
            "simulate",
            "--trials",
            "5",
            "--draws",
            "0",
            "--json",
            str(out),
        ],
        "export-onnx": lambda out: ["export-onnx", str(p["bot"]), "--out", str(out)],
        "replay": lambda out: ["replay", inert, rnd, "--out", str(out)],
    }


NAMES = {
    "history-csv": "h.csv",
    "history-jsonl": "h.jsonl",
    "history-parquet": "h.parquet",
    "gate-json": "g.json",
    "export-onnx": "m.onnx",
    "replay": "r.png",
}
runner = CliRunner()


def invoke(argv: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, argv)
    return result.exit_code, result.stderr


# replay plays a whole match per write (about 3 s each)
SLOW = {"replay"}


@pytest.mark.parametrize(
    "command",
    [pytest.param(c, marks=pytest.mark.slow) if c in SLOW else c for c in NAMES],
)
def test_a_device_is_written_in_place_and_a_failed_write_is_reported(
    places: dict[str, Path], command: str
) -> None:
    argv = commands(places)[command]
    suffix = Path(NAMES[command]).suffix  # replay and export-onnx want theirs
    null = device(places["tmp"], "null" + suffix, 3)
    code, err = invoke(argv(null))
    assert code == 0, err
    assert stat.S_ISCHR(os.stat(null).st_mode)  # still the device, not a plain file
    full = device(places["tmp"], "full" + suffix, 7)
    code, err = invoke(argv(full))
    assert code == 1 and stat.S_ISCHR(os.stat(full).st_mode)
    line = err.strip()
    assert line.startswith("error: ") and "\n" not in line and "Traceback" not in line
    assert str(full) in line and "No space left on device" in line, line


class FifoReader:
    """A FIFO in tmp with a thread reading all it gets."""

    def __init__(self, path: Path) -> None:
        self.path, self.data = path, b""
        os.mkfifo(path)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with open(self.path, "rb") as fh:  # blocks until a writer opens it
            self.data = fh.read()

    def join(self) -> bytes:
        self.thread.join(timeout=60)
        assert not self.thread.is_alive()
        return self.data


def test_a_ladder_file_that_is_a_fifo_is_written_into_it(places: dict[str, Path]) -> None:
    out = places["tmp"] / "ladder"
    out.mkdir()
    fifo = FifoReader(out / "ladder.json")
    argv = ["ladder", "--bots-dir", str(places["bots"]), "--pairs", "1", "--out-dir", str(out)]
    code, err = invoke(argv)
    assert code == 0, err
    assert json.loads(fifo.join())["bots"] == ["inert", "random"]
    assert stat.S_ISFIFO(os.lstat(out / "ladder.json").st_mode)
    assert (out / "ladder.md").is_file() and (out / "ladder.png").is_file()


@pytest.mark.parametrize("command", ["history-csv", "history-parquet", "gate-json"])
def test_a_fifo_is_written_into_and_one_without_a_reader_is_an_error(
    places: dict[str, Path], command: str
) -> None:
    argv = commands(places)[command]
    fifo = FifoReader(places["tmp"] / "pipe")
    code, err = invoke(argv(fifo.path))
    assert code == 0, err
    assert len(fifo.join()) > 100 and stat.S_ISFIFO(os.lstat(fifo.path).st_mode)
    lonely = places["tmp"] / "lonely"
    os.mkfifo(lonely)
    code, err = invoke(argv(lonely))  # nobody reads: an error at once, never a hang
    assert code == 1 and "a FIFO that nobody reads" in err and str(lonely) in err
    assert stat.S_ISFIFO(os.lstat(lonely).st_mode)


def test_dev_stdout_writes_to_stdout_and_stays_a_link(places: dict[str, Path]) -> None:
    """`--out /dev/stdout` (here a link of our own to /proc/self/fd/1, like the system's),
    with stdout a pipe and a file opened to append (`>>`): written to the descriptor."""
    link = places["tmp"] / "stdout"
    link.symlink_to("/proc/self/fd/1")
    argv = [sys.executable, "-m", "cosmic_curriculum", "history", "export"]
    argv += ["--history", str(places["history"]), "--out", str(link)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    piped = subprocess.run(argv, capture_output=True, env=env, timeout=120)
    captured = places["tmp"] / "captured.csv"
    captured.write_bytes(b"kept\n")
    with open(captured, "ab") as fh:  # `>> captured.csv`: the descriptor as it is open
        to_file = subprocess.run(argv, stdout=fh, stderr=subprocess.PIPE, env=env, timeout=120)
    appended = captured.read_bytes()
    assert appended.startswith(b"kept\n"), appended[:40]
    for done, written in ((piped, piped.stdout), (to_file, appended.removeprefix(b"kept\n"))):
        assert done.returncode == 0, done.stderr
        assert written.startswith(b"time,stage,experiment") and b"bots/a.json" in written
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"


def test_a_directory_or_a_missing_one_is_refused_and_nothing_is_created(
    places: dict[str, Path],
) -> None:
    for command, argv in commands(places).items():
        directory = places["tmp"] / f"dir-{NAMES[command]}"
        directory.mkdir()
        code, err = invoke(argv(directory))
        assert code == 2 and "is a directory; name a file inside it" in err, (command, err)
        missing = places["tmp"] / "nowhere" / "deeper" / NAMES[command]
        code, err = invoke(argv(missing))
        assert code == 2 and "does not exist; create it or choose another" in err, (command, err)
        assert not (places["tmp"] / "nowhere").exists(), command


def bare_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    code, err = invoke(["init", "--bare", str(ws)])
    assert code == 0, err
    return ws


def test_report_out_never_creates_a_directory(tmp_path: Path) -> None:
    ws = bare_workspace(tmp_path)
    missing = tmp_path / "nowhere" / "r.html"
    code, err = invoke(["report", "--workspace", str(ws), "--out", str(missing)])
    assert code == 2 and f"directory {missing.parent} does not exist" in err, err
    assert not missing.parent.exists()
    null = device(tmp_path, "null", 3)
    code, err = invoke(["report", "--workspace", str(ws), "--out", str(null)])
    assert code == 0 and stat.S_ISCHR(os.stat(null).st_mode), err


def test_history_sources_that_are_no_file_say_what_they_are(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for source, needle in (
        (tmp_path, "is a directory; name the eval_history.json file in it"),
        (fifo, "is a FIFO, not a regular file"),
        (tmp_path / "missing.json", "no such file"),
    ):
        code, err = invoke(["history", "export", "--history", str(source)])
        assert code == 1, err  # as every history that cannot be read
        assert f"--history {source}: {needle}" in err and len(err.strip().splitlines()) == 1


# --- symlinks: followed within one workspace (or outside any), else refused -----------


def test_a_symlink_outside_workspaces_is_written_through_and_kept(places: dict[str, Path]) -> None:
    real = places["tmp"] / "real.csv"
    real.write_text("old\n")
    real.chmod(0o600)
    link = places["tmp"] / "link.csv"
    link.symlink_to(real.name)
    code, err = invoke(commands(places)["history-csv"](link))
    assert code == 0, err
    assert link.is_symlink() and real.read_text().startswith("time,stage")
    assert stat.S_IMODE(real.stat().st_mode) == 0o600  # a private file stays private
    dangling = places["tmp"] / "dangling.csv"
    dangling.symlink_to("new.csv")
    assert invoke(commands(places)["history-csv"](dangling))[0] == 0
    assert dangling.is_symlink() and (places["tmp"] / "new.csv").is_file()


def test_a_symlink_across_a_workspace_border_is_refused(tmp_path: Path) -> None:
    ws = bare_workspace(tmp_path)
    outside = tmp_path / "outside.html"
    outside.write_text("keep\n")
    (ws / "REPORT.html").symlink_to(outside)  # out of the workspace
    code, err = invoke(["report", "--workspace", str(ws)])
    assert code == 2 and "leads through a symbolic link to" in err and "border" in err, err
    assert outside.read_text() == "keep\n" and (ws / "REPORT.html").is_symlink()
    # ... and into one from outside: the workspace's own history is never the target
    history = ws / "eval_history.json"
    before = history.read_bytes()
    into = tmp_path / "into.csv"
    into.symlink_to(history)
    code, err = invoke(["history", "export", "--history", str(history), "--out", str(into)])
    assert code == 2 and "across a workspace's border" in err, err
    assert history.read_bytes() == before
    # a symlinked directory on the way counts too: one leading out of the workspace
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ws / "plots").symlink_to(elsewhere)
    code, err = invoke(["report", "--workspace", str(ws), "--out", str(ws / "plots" / "p.html")])
    assert code == 2 and "border" in err and not (elsewhere / "p.html").exists(), err
    # within the workspace a link is followed
    (ws / "logs").mkdir(exist_ok=True)
    (ws / "logs" / "page.html").write_text("old\n")
    (ws / "page.html").symlink_to("logs/page.html")
    assert invoke(["report", "--workspace", str(ws), "--out", str(ws / "page.html")])[0] == 0
    assert "</html>" in (ws / "logs" / "page.html").read_text()


def test_the_checks_are_one_line_config_errors(tmp_path: Path) -> None:
    from cosmic_curriculum.workspace import outputs

    sock_dir = tmp_path / "s"
    sock_dir.mkdir()
    import socket

    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(sock_dir / "sock"))
        with pytest.raises(ConfigError, match="is a socket"):
            outputs.check_output(sock_dir / "sock", "--out")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="a parent is not a directory"):
        outputs.check_output(tmp_path / "file" / "x.csv", "--out")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(ConfigError, match="choose another path"):
        outputs.check_output(loop, "--out")
    output_files.write_output(tmp_path / "plain.txt", b"ok", "--out")  # no fence: a plain write
    assert (tmp_path / "plain.txt").read_bytes() == b"ok"
    assert not [p for p in tmp_path.iterdir() if fsio.TEMP_MARKER in p.name]


# --- report --open --------------------------------------------------------------------


@pytest.mark.slow
def test_report_open_says_when_no_browser_opened(tmp_path: Path) -> None:
    ws = bare_workspace(tmp_path)
    seen = tmp_path / "seen"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\necho "$1" > {seen}\n')
    browser.chmod(0o755)
    argv = [sys.executable, "-m", "cosmic_curriculum", "report", "--workspace", str(ws), "--open"]
    base = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    base["PYTHONPATH"] = str(REPO)
    failed = subprocess.run(
        argv, capture_output=True, text=True, env={**base, "BROWSER": "false"}, timeout=120
    )
    assert failed.returncode == 0 and failed.stdout.startswith("report: ")
    assert "warning: --open: no web browser could be started" in failed.stderr
    opened = subprocess.run(
        argv, capture_output=True, text=True, env={**base, "BROWSER": str(browser)}, timeout=120
    )
    assert opened.returncode == 0 and opened.stderr == "", opened.stderr
    assert seen.read_text().strip() == (ws / "REPORT.html").resolve().as_uri()


@pytest.mark.slow
def test_evaluate_history_appends_through_a_link_and_refuses_what_it_cannot_append_to(
    places: dict[str, Path],
) -> None:
    """`evaluate --history` is an output too: a link is followed (the record lands in its
    target, the link stays), a FIFO or device is refused before any game."""
    inert, rnd = str(places["bots"] / "inert.json"), str(places["bots"] / "random.json")
    link = places["tmp"] / "linked.json"
    link.symlink_to(places["history"].name)
    code, err = invoke(["evaluate", inert, rnd, "-n", "2", "--history", str(link)])
    assert code == 0, err
    assert link.is_symlink() and len(json.loads(places["history"].read_text())) == 2
    fifo = places["tmp"] / "fifo.json"
    os.mkfifo(fifo)
    for target in (fifo, device(places["tmp"], "null.json", 3)):
        code, err = invoke(["evaluate", inert, rnd, "-n", "2", "--history", str(target)])
        assert code == 1 and f"--history {target}: not a regular file" in err, err
        assert not stat.S_ISREG(os.stat(target).st_mode)


@pytest.mark.slow
def test_an_output_named_in_bytes_that_are_not_utf8_is_written_and_said(
    places: dict[str, Path],
) -> None:
    """The file gets its exact name; what the command prints shows the byte escaped, even
    on a stdout that takes only UTF-8."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONIOENCODING": "utf-8:strict"}
    raw = bytes(places["tmp"]) + b"/m\xff.onnx"
    argv = [sys.executable.encode(), b"-m", b"cosmic_curriculum", b"export-onnx"]
    done = subprocess.run(
        [*argv, bytes(places["bot"]), b"--out", raw], capture_output=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert os.path.isfile(raw) and done.stdout.strip().endswith(b"/m\\xff.onnx")
