"""The Ray launcher against addresses that are not a working dashboard: a real TCP server
on 127.0.0.1 that accepts and never answers, one that answers HTTP that is not Ray's, and
the address forms Ray would send through its own slow machinery (no scheme, ``ray://``).
Each is one line, bounded by ``[launcher] request_timeout``, with no Ray log lines; no
cluster is started (the Ray tests that need one are in test_launchers_ray.py)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.workspace import run_cli, trainer_runs
from raycluster import ray_workspace
from tcp_servers import serving

from cosmic_curriculum.launchers import LaunchError
from cosmic_curriculum.launchers.ray import RayLauncher
from cosmic_curriculum.workspace.config import LauncherConfig

pytest.importorskip("ray.job_submission")


def _serve(answer: bytes | None) -> Iterator[str]:
    with serving(answer) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def silent_server() -> Iterator[str]:
    yield from _serve(None)


@pytest.fixture
def garbage_server() -> Iterator[str]:
    yield from _serve(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nnot json!")


@pytest.fixture
def not_http_server() -> Iterator[str]:
    yield from _serve(b"SSH-2.0-OpenSSH_9.2\r\n")


@pytest.fixture
def flaky_dashboard() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server that resets its first two connections (as a loaded dashboard drops
    them), then answers the two requests a resumed run's `attach` makes: the version
    check and a job that does not exist. Yields its address and what it did."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    seen: list[str] = []
    stop = threading.Event()

    def loop() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                if seen.count("dropped") < 2:
                    seen.append("dropped")
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
                    continue  # closed with a reset, nothing said
                conn.settimeout(5)
                path = conn.recv(65536).split(b" ")[1].decode()
                seen.append(path)
                if path == "/api/version":
                    status, body = "200 OK", b'{"ray_version": "2.58.0", "version": "x"}'
                else:
                    status, body = "404 Not Found", b"Job cosmic-x does not exist"
                conn.sendall(
                    f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n"
                    "Connection: close\r\n\r\n".encode()
                    + body
                )

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}", seen
    finally:
        stop.set()
        thread.join(5)
        server.close()


@pytest.mark.timeout(60)
def test_dropped_connections_are_asked_again_within_a_bound(
    flaky_dashboard: tuple[str, list[str]],
) -> None:
    """A dashboard that drops a connection for a moment (under load) does not fail the
    run: the call is made again, a bounded number of times."""
    from cosmic_curriculum.launchers import TrainerRecord

    address, seen = flaky_dashboard
    launcher = _launcher(address)
    record = TrainerRecord(None, None, None, "tag", "cosmic-x")
    assert launcher.attach(record) == "gone"
    assert seen[:2] == ["dropped", "dropped"] and "/api/jobs/cosmic-x" in seen


def _launcher(address: str) -> RayLauncher:
    return RayLauncher(LauncherConfig(kind="ray", address=address, request_timeout=0.5))


@pytest.mark.timeout(60)  # the bound: without request timeouts this hung for good
def test_a_server_that_accepts_and_never_answers_times_out_in_one_line(
    tmp_path: Path, silent_server: str
) -> None:
    with pytest.raises(LaunchError) as info:
        _launcher(silent_server).check(tmp_path)
    msg = str(info.value)
    assert "\n" not in msg and silent_server in msg
    assert "no answer within 0.5 s" in msg and "request_timeout" in msg
    assert not list(tmp_path.glob(".cosmic-probe-*"))


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "server",
    ["garbage_server", pytest.param("not_http_server", marks=pytest.mark.slow)],  # retried
)
def test_a_server_that_is_not_a_ray_dashboard_is_one_line(
    tmp_path: Path, server: str, request: pytest.FixtureRequest
) -> None:
    address = request.getfixturevalue(server)
    with pytest.raises(LaunchError) as info:
        _launcher(address).check(tmp_path)
    msg = str(info.value)
    assert "\n" not in msg and address in msg and "Traceback" not in msg
    if server == "garbage_server":
        assert "the answer is not a Ray dashboard's" in msg


@pytest.mark.timeout(30)
@pytest.mark.parametrize("address", ["127.0.0.1:9", "ray://127.0.0.1:9", "auto"])
def test_ray_address_forms_that_ray_would_resolve_slowly_are_refused_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, address: str
) -> None:
    """RAY_ADDRESS (the launcher's fallback) of another form: refused before Ray runs
    (its GCS or client path took 31-41 s here and printed Ray's own lines)."""
    monkeypatch.setenv("RAY_ADDRESS", address)
    with pytest.raises(LaunchError) as info:
        RayLauncher(LauncherConfig(kind="ray")).check(tmp_path)
    msg = str(info.value)
    assert msg.startswith(f"RAY_ADDRESS {address!r}") and "http://" in msg and "\n" not in msg


@pytest.mark.timeout(60)
def test_the_configured_address_wins_over_ray_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, silent_server: str
) -> None:
    """Ray's client prefers RAY_ADDRESS to the address it is given (a GCS address there
    sent it down its 40 s path); the launcher talks to the address of the config."""
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:9")
    with pytest.raises(LaunchError) as info:
        _launcher(silent_server).check(tmp_path)
    assert silent_server in str(info.value) and "no answer within" in str(info.value)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_run_against_a_silent_dashboard_is_one_line_before_training(
    tmp_path: Path, silent_server: str
) -> None:
    ws = ray_workspace(tmp_path / "ws", silent_server)
    toml = ws / "stages.toml"
    toml.write_text(
        toml.read_text().replace("num_gpus = 1\n", "num_gpus = 1\nrequest_timeout = 1\n")
    )
    result = run_cli(ws)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr  # no Ray log lines, no traceback
    assert "no answer within 1 s" in lines[0]
    assert trainer_runs(ws) == []


@pytest.mark.parametrize(
    ("ended", "reason"),
    [
        (
            "JOB_SUPERVISOR_ACTOR_DIED: Job supervisor actor died: The actor died because its "
            "node has died. Node Id: 5f2c",
            "NODE_FAIL",
        ),
        ("JOB_SUPERVISOR_ACTOR_DIED: Job supervisor actor died: killed by ray.kill", None),
        ("JOB_ENTRYPOINT_COMMAND_ERROR: Job entrypoint command failed with exit code 1", None),
        (": Job finished successfully.", None),
    ],
)
def test_ray_says_a_job_was_ended_by_its_node_only_when_the_node_died(
    tmp_path: Path, ended: str, reason: str | None
) -> None:
    # How `result` records Ray's job info (error_type: message); no cluster needed.
    from cosmic_curriculum.launchers.ray import RayJob

    job = RayJob(tmp_path / "x.log", "cosmic-x-0123456789ab", "tag")
    job.message = ended
    assert RayLauncher(LauncherConfig(kind="ray")).ended_by(job) == reason
