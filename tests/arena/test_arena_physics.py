"""physics: the compiled tick — pinned bits, games independent of their batch, and a
cache that can be damaged or missing without stopping anything."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from arena_helpers import FULL, PLANAR, crowded_state

import cosmic_curriculum
from cosmic_curriculum.arena import physics
from cosmic_curriculum.arena.rules import ACT_SIZE, ArenaState, reset_games, step
from cosmic_curriculum.arena.settings import GameSettings

FIELDS = ("ship_pos", "ship_vel", "ship_fwd", "ship_up", "orb_pos", "orb_vel", "ticks")


def rotations(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random rotation matrices ``(n, 2, 3, 3)`` from unit quaternions, by + - * / and sqrt
    only: all correctly rounded, so the same bits on every machine (sin, cos and exp are
    not, which is why nothing here uses them)."""
    q = rng.uniform(-1.0, 1.0, size=(4, n, 2))
    w, x, y, z = q / np.sqrt(((q[0] * q[0] + q[1] * q[1]) + q[2] * q[2]) + q[3] * q[3])
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ]
    return np.stack([np.stack(r, axis=-1) for r in rows], axis=-2)


def kernel_constants(settings: GameSettings) -> np.ndarray:
    """The rules' constants with the two drag factors (which exp computes) replaced by
    literals: the pinned bits must not depend on a machine's exp."""
    from cosmic_curriculum.arena.rules import _consts

    k = _consts(settings).kernel.copy()
    k[physics.CONSTANTS.index("ship_decay")] = 0.99625
    k[physics.CONSTANTS.index("orb_decay")] = 0.9990234375
    return k


def run_kernel(settings: GameSettings, seed: int, n: int, ticks: int) -> str:
    """``ticks`` compiled ticks of ``n`` crowded games (ships and orb close together, some
    orbs near an end wall) with random held turns and pushes, new every 5 ticks, straight
    through ``physics.tick``; the digest of every event and of the final state."""
    rng = np.random.default_rng(seed)
    axes = rotations(rng, n)
    centre = rng.uniform(-17.0, 17.0, size=(n, 1, 3)) * np.array([1.0, 0.4, 0.5])
    state = ArenaState(
        ship_pos=centre + rng.uniform(-2.0, 2.0, size=(n, 2, 3)),
        ship_vel=rng.uniform(-8.0, 8.0, size=(n, 2, 3)),
        ship_fwd=axes[:, :, 0].copy(),
        ship_up=axes[:, :, 2].copy(),
        orb_pos=centre[:, 0] + rng.uniform(-2.0, 2.0, size=(n, 3)),
        orb_vel=rng.uniform(-12.0, 12.0, size=(n, 3)),
        ticks=np.zeros(n, dtype=np.int64),
    )
    if not settings.allow_vertical:
        for name in ("ship_pos", "ship_vel", "orb_pos", "orb_vel"):
            getattr(state, name)[..., 2] = 0.0
    k = kernel_constants(settings)
    digest = hashlib.sha256()
    events = [np.empty(n, dtype=bool) for _ in range(4)]
    goals = 0
    for t in range(ticks):
        if t % 5 == 0:
            turn, push = rotations(rng, n), rng.uniform(-0.2, 0.2, size=(n, 2, 3))
        physics.tick(
            state.ship_pos,
            state.ship_vel,
            state.ship_fwd,
            state.ship_up,
            state.orb_pos,
            state.orb_vel,
            state.ticks,
            False,
            turn,
            push,
            not settings.allow_vertical,
            settings.allow_vertical,
            k,
            *events,
        )
        goals += int(events[0].sum() + events[1].sum())
        digest.update(b"".join(e.tobytes() for e in events))
    for name in FIELDS:
        digest.update(getattr(state, name).tobytes())
    assert goals > 0  # the goal path ran
    return digest.hexdigest()[:16]


@pytest.mark.parametrize(
    ("settings", "expected"),
    [(FULL, "9caeeb68cda13a04"), (GameSettings(allow_vertical=False), "53bfe5a5b5298f23")],
    ids=["3d", "flat-pitch-roll"],
)
def test_the_compiled_tick_gives_pinned_bits(settings: GameSettings, expected: str) -> None:
    # A change here means the rules' results changed: fused multiply-adds (fast math),
    # reordered sums, or an edited rule. (The kernel was checked byte for byte against
    # the numpy array formulation it replaced: docs/BENCHMARKS.md.)
    assert run_kernel(settings, seed=22, n=32, ticks=400) == expected


@pytest.mark.parametrize("settings", [FULL, PLANAR], ids=["3d", "planar"])
def test_a_game_plays_the_same_whatever_else_is_in_its_batch(settings: GameSettings) -> None:
    rng = np.random.default_rng(23)
    batch = crowded_state(12, rng, settings)
    alone = [batch.take([g]) for g in range(12)]
    for t in range(300):
        if t % 7 == 0:
            actions = rng.uniform(-1.0, 1.0, size=(12, 2, ACT_SIZE))
        batch, ev = step(batch, actions, settings, rng)
        for g in range(12):
            alone[g], ev_g = step(alone[g], actions[g : g + 1].copy(), settings, rng)
            assert ev_g.done[0] == ev.done[g]
        reset_games(batch, ev.done, settings, rng)
        for g in np.flatnonzero(ev.done):
            alone[g] = batch.take([g])  # the same kickoff as in the batch
    for g in range(12):
        for name in FIELDS:
            assert getattr(alone[g], name).tobytes() == getattr(batch, name)[g : g + 1].tobytes()


# --------------------------------------------------------------------------- the cache

STEP = (
    "import numpy as np; from cosmic_curriculum.arena.rules import new_state, step; "
    "from cosmic_curriculum.arena.settings import GameSettings; s = GameSettings(); "
    "r = np.random.default_rng(0); st = new_state(4, s, r); "
    "[step(st, r.uniform(-1, 1, (4, 2, 6)), s, r) for _ in range(50)]; "
    "print(st.ship_pos.tobytes().hex()); from cosmic_curriculum.arena import physics; "
    "print(type(physics.tick._cache).__name__)"  # numba's FunctionCache, or NullCache
)


def package_copy(tmp_path: Path, caches: bool = False) -> Path:
    """A copy of the package to damage freely; with ``caches``, its compiled caches too
    (copied with their sources' times, so numba takes them as fresh: no compiling)."""
    root = tmp_path / "pkg"
    source = Path(cosmic_curriculum.__file__).parent
    skip = shutil.ignore_patterns() if caches else shutil.ignore_patterns("__pycache__")
    shutil.copytree(source, root / "cosmic_curriculum", ignore=skip)
    return root


def play(root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    base |= {"PYTHONPATH": str(root), "PYTHONWARNINGS": "default"} | env
    return subprocess.run(  # run from the copy: `python -c` imports from the cwd first
        [sys.executable, "-c", STEP],
        capture_output=True,
        text=True,
        env=base,
        cwd=root,
        timeout=300,
    )


@pytest.mark.slow
def test_a_damaged_cache_is_rebuilt_with_a_warning(tmp_path: Path) -> None:
    root = package_copy(tmp_path, caches=True)
    first = play(root)
    assert first.returncode == 0, first.stderr
    cached = sorted((root / "cosmic_curriculum" / "arena" / "__pycache__").glob("physics.*"))
    assert cached, "the compiled tick was not cached"
    for path in cached:
        path.write_bytes(path.read_bytes()[:20])  # a copy cut short
    damaged = play(root)
    assert damaged.returncode == 0, damaged.stderr
    assert damaged.stdout == first.stdout
    assert first.stdout.splitlines()[1] == "FunctionCache"
    assert "could not be loaded from numba's cache" in damaged.stderr
    assert "rebuilt its cache" in damaged.stderr
    again = play(root)
    assert again.returncode == 0 and again.stdout == first.stdout
    assert "numba" not in again.stderr  # repaired: no warning any more


@pytest.mark.slow
def test_no_writable_cache_directory_compiles_in_the_process(tmp_path: Path) -> None:
    root = package_copy(tmp_path)
    # neither next to the code (a file where __pycache__ would go) nor in the user's cache
    (root / "cosmic_curriculum" / "arena" / "__pycache__").write_text("not a directory")
    blocked = tmp_path / "blocked"
    blocked.write_text("not a directory")
    result = play(root, XDG_CACHE_HOME=str(blocked / "cache"), HOME=str(blocked / "home"))
    assert result.returncode == 0, result.stderr
    here = io.StringIO()
    with contextlib.redirect_stdout(here):
        exec(STEP, {})  # the same steps in this process, with its cached kernel
    assert result.stdout.splitlines() == [here.getvalue().splitlines()[0], "NullCache"]
