"""GameSettings: defaults, strictness, and one-line errors that name the setting."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from cosmic_curriculum.arena.settings import GameSettings, settings_from_dict
from cosmic_curriculum.errors import describe_validation


def test_defaults_are_valid_and_round_trip() -> None:
    s = GameSettings()
    assert GameSettings.model_validate(s.model_dump()) == s
    assert s.max_ticks == 2400 and s.arena_length == 40.0
    assert s.goal_reward == 1.0 and s.draw_penalty == 0.0 and s.attack_goal_bias == 0.0
    with pytest.raises(ValidationError):
        s.tick = 0.1  # type: ignore[misc]  # frozen


@pytest.mark.parametrize(
    "data,fault",
    [
        ({"gravity": 1.0}, "unknown setting 'gravity'"),
        ({"decision_ticks": 0}, "decision_ticks=0: Input should be greater than or equal to 1"),
        ({"tick": 0.0}, "tick=0.0"),
        ({"goal_half_width": 11.0}, "goal_half_width=11.0 exceeds arena_half_width=10.0"),
        ({"goal_half_width": 1.0}, "must exceed orb_radius"),
        ({"time_limit": 0.1}, "shorter than one decision"),
        ({"kickoff_jitter": 9.5}, "side walls"),
        ({"orb_radius": 3.5}, "do not fit in the arena"),
        ([], "must be a JSON object"),
    ],
)
def test_errors_are_one_line_and_name_the_setting(data: object, fault: str) -> None:
    with pytest.raises(ValueError) as info:
        settings_from_dict(data)
    assert fault in str(info.value)
    assert "\n" not in str(info.value)


def test_planar_mode_allows_a_low_goal() -> None:
    # the goal height only matters in 3-D play
    GameSettings(allow_vertical=False, goal_half_height=0.5)
    with pytest.raises(ValidationError) as info:
        GameSettings(goal_half_height=0.5)
    assert "goal_half_height=0.5 must exceed orb_radius" in describe_validation(info.value)


def test_the_game_and_bots_never_import_torch_or_sb3() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import cosmic_curriculum.arena, cosmic_curriculum.arena.match\n"
        "import cosmic_curriculum.arena.gym_env, cosmic_curriculum.bots\n"
        "print(sorted(m for m in ('torch', 'stable_baselines3') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
