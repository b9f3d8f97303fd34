from __future__ import annotations

from cosmic_curriculum.progress import format_progress, parse_progress_line


def test_roundtrip_drops_non_finite() -> None:
    line = format_progress(timesteps=10, total=100, fps=5.5, reward=float("nan"), win_rate=None)
    assert line.startswith("@progress ")
    assert parse_progress_line(line) == {"timesteps": 10, "total": 100, "fps": 5.5}


def test_other_lines_are_not_progress() -> None:
    for line in [
        "",
        "Using cpu device",
        "@progress {",
        "@progress []",
        '@progress {"total": 3}',
        '@progress {"timesteps": true, "total": 3}',
    ]:
        assert parse_progress_line(line) is None


def test_ignores_unknown_and_bad_optional_fields() -> None:
    got = parse_progress_line('@progress {"timesteps": 1, "total": 2, "reward": "x", "foo": 1}\n')
    assert got == {"timesteps": 1, "total": 2}
