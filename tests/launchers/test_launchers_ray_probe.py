"""The Ray launcher's shared-filesystem probe failing, against a real cluster that cannot see
the workspace: its processes run in their own mount namespace with an empty tmpfs over the
test's directory, as a GPU node without the login box's filesystem would. Marked slow."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from fakes.workspace import read_state, run_cli, trainer_runs
from raycluster import local_ray_cluster, ray_workspace, submission_ids

pytestmark = pytest.mark.slow


def _can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "true"], capture_output=True
    )
    return probe.returncode == 0


@pytest.mark.skipif(not _can_unshare(), reason="needs unshare --mount (root or user namespaces)")
def test_a_workspace_the_cluster_cannot_see_stops_the_run_before_any_training(
    tmp_path: Path,
) -> None:
    with local_ray_cluster(hidden=tmp_path) as address:
        ws = ray_workspace(tmp_path / "ws", address)
        result = run_cli(ws)
        submitted = submission_ids(address)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "could not read and write the workspace" in lines[0]
    assert "mount it at the same path on every node" in lines[0]
    assert 'kind = "local"' in lines[0]
    # Nothing trained, only the probe was submitted, and it left no file behind.
    assert trainer_runs(ws) == []
    assert len(submitted) == 1 and submitted[0].startswith("cosmic-probe-")
    assert not list(ws.glob(".cosmic-probe-*"))
    assert (read_state(ws).get("in_flight") or {}).get("launched") is None
