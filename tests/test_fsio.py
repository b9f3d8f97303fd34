from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cosmic_curriculum.errors import StateError
from cosmic_curriculum.system import fsio
from cosmic_curriculum.system.fsio import atomic_write_json, clean_stale_temps, read_json


def test_atomic_write_roundtrip(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "x.json"
    atomic_write_json(target, {"a": [1, 2]})
    assert read_json(target, "thing") == {"a": [1, 2]}
    assert [p.name for p in target.parent.iterdir()] == ["x.json"]


def test_unserialisable_value_leaves_old_file(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    atomic_write_json(target, {"v": 1})
    with pytest.raises(ValueError):
        atomic_write_json(target, {"v": float("nan")})
    assert json.loads(target.read_text()) == {"v": 1}


def test_disk_full_keeps_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "x.json"
    atomic_write_json(target, {"v": 1})

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError):
        atomic_write_json(target, {"v": 2})
    monkeypatch.undo()
    assert json.loads(target.read_text()) == {"v": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [("", "is empty"), ('{"a": ', "not valid JSON"), ("\xff\xfe", "not UTF-8")],
)
def test_read_json_refuses_bad_files(tmp_path: Path, content: str, fragment: str) -> None:
    bad = tmp_path / "curriculum_state.json"
    if content == "\xff\xfe":
        bad.write_bytes(b"\xff\xfe\x00")
    else:
        bad.write_text(content)
    with pytest.raises(StateError) as info:
        read_json(bad, "curriculum state")
    msg = str(info.value)
    assert fragment in msg and str(bad) in msg and "\n" not in msg


def test_clean_stale_temps_only_touches_ours(tmp_path: Path) -> None:
    (tmp_path / ".state.json.tmp-123-abcd").write_text("{")
    (tmp_path / ".other.json.tmp-9-ff").write_text("{")
    (tmp_path / "notes.tmp-1").write_text("user file")
    removed = clean_stale_temps(tmp_path, ["state.json"])
    assert [p.name for p in removed] == [".state.json.tmp-123-abcd"]
    assert (tmp_path / ".other.json.tmp-9-ff").exists()
    clean_stale_temps(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.tmp-1"]


WRITER = """
import sys
from pathlib import Path
from cosmic_curriculum.system.fsio import atomic_write_json
target = Path(sys.argv[1])
i = 0
print("ready", flush=True)
while True:
    i += 1
    atomic_write_json(target, {"i": i, "payload": ["x" * 100] * 200})
"""


@pytest.mark.slow
def test_kill_9_during_writes_never_leaves_a_torn_file(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    atomic_write_json(target, {"i": 0, "payload": []})
    for trial in range(10):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        proc.stdout.readline()
        time.sleep(0.05 + 0.013 * trial)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        data = read_json(target, "state")  # must parse after every kill
        assert isinstance(data["i"], int)
        clean_stale_temps(tmp_path)
        assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_a_git_ignored_dir_keeps_what_is_written_in_it_out_of_git_status(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    place = fsio.git_ignored_dir(tmp_path / "logs" / "tracking")
    (place / "events.jsonl").write_text("{}\n")
    (place / "scalars").mkdir()
    (place / "scalars" / "a.jsonl").write_text("{}\n")
    assert fsio.git_ignored_dir(place) == place  # again: the user's edit of it is kept
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == ""
