"""The entry point: numpy's BLAS runs single-threaded in every process the command starts
(a setting the user made is kept); `status`'s fast path is in tests/test_status_cache.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("threadpoolctl")

# What the command's own process and a trainer it starts see: the BLAS pools numpy
# loaded, and their threads, read back by threadpoolctl after the entry point's set-up.
PROBE = """
import json, subprocess, sys
from cosmic_curriculum.entry import single_threaded_blas
single_threaded_blas()
import numpy, threadpoolctl
child = subprocess.run([sys.executable, "-c", "import numpy, threadpoolctl, json; "
    "print(json.dumps([p['num_threads'] for p in threadpoolctl.threadpool_info() "
    "if p['user_api'] == 'blas']))"], capture_output=True, text=True, check=True)
pools = [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
print(json.dumps({"own": pools, "child": json.loads(child.stdout)}))
"""


def threads(**env: str) -> dict[str, list[int]]:
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    result: dict[str, list[int]] = json.loads(done.stdout)
    return result


def test_numpy_and_the_processes_it_starts_use_one_blas_thread() -> None:
    seen = threads()
    assert seen["own"] and seen["child"]  # numpy's BLAS was found
    assert set(seen["own"]) == set(seen["child"]) == {1}


def test_a_users_blas_threads_are_kept() -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: a second BLAS thread is not started")
    seen = threads(OPENBLAS_NUM_THREADS="2", MKL_NUM_THREADS="2")
    assert set(seen["own"]) == set(seen["child"]) == {2}
