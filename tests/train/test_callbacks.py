"""Self-play: snapshots and swaps on schedule, latest-snapshot odds, the rookie's share."""

from __future__ import annotations

from pathlib import Path

import pytest
from train_helpers import Watch, env_of, tiny

from cosmic_curriculum import train
from cosmic_curriculum.train.callbacks import SwapEvent

# --- self-play --------------------------------------------------------------------------


@pytest.mark.slow
def test_self_play_snapshots_and_swaps_on_schedule(tmp_path: Path) -> None:
    settings = tiny(
        tmp_path,
        opponent_mode="self_play",
        timesteps=2048,
        selfplay_snapshot_every=512,
        selfplay_swap_every=128,
        selfplay_window=2,
        selfplay_play_latest=0.5,
        selfplay_rookie_share=0.0,
    )
    watch = Watch(every_step=lambda cb: env_of(cb).opponent)
    result = train.train(settings, [watch])
    stats = result.stats
    assert stats.snapshots == [0, 512, 1024, 1536, 2048]
    assert [s.timesteps for s in stats.swaps] == list(range(0, 2049, 128))
    # every swap picks from the window of the last two snapshots
    for swap in stats.swaps:
        window = [t for t in stats.snapshots if t <= swap.timesteps][-2:]
        assert swap.snapshot_timesteps in window
        assert swap.latest == (swap.snapshot_timesteps == window[-1])
    assert any(s.latest for s in stats.swaps[4:]) and any(not s.latest for s in stats.swaps[4:])
    assert all(opp.kind == "mlp" for opp in watch.seen)
    assert len({id(opp) for opp in watch.seen}) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("p", [0.0, 1.0])
def test_self_play_latest_probability_extremes(tmp_path: Path, p: float) -> None:
    settings = tiny(
        tmp_path,
        opponent_mode="self_play",
        timesteps=1024,
        selfplay_snapshot_every=256,
        selfplay_swap_every=128,
        selfplay_window=3,
        selfplay_play_latest=p,
        selfplay_rookie_share=0.0,
    )
    swaps = train.train(settings).stats.swaps
    later = [s for s in swaps if s.timesteps >= 256]  # once there is an older snapshot
    assert later and all(s.latest == (p == 1.0) for s in later)


@pytest.mark.slow
def test_self_play_rookie_share_mixes_in_the_scripted_rookie(tmp_path: Path) -> None:
    def opponents(share: float) -> tuple[list[SwapEvent], set[str]]:
        settings = tiny(
            tmp_path,
            name=f"share{share}",
            opponent_mode="self_play",
            timesteps=1024,
            selfplay_swap_every=64,
            selfplay_rookie_share=share,
        )
        watch = Watch(every_step=lambda cb: env_of(cb).opponent.kind)
        swaps = train.train(settings, [watch]).stats.swaps
        return swaps, set(watch.seen)

    swaps, kinds = opponents(1.0)
    assert all(s.snapshot_timesteps == -1 for s in swaps) and kinds == {"scripted"}
    swaps, kinds = opponents(0.0)
    assert all(s.snapshot_timesteps >= 0 for s in swaps) and kinds == {"mlp"}
    swaps, kinds = opponents(0.5)
    assert kinds == {"mlp", "scripted"}
