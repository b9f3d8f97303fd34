"""stages.toml's whole-file checks (workspace/config_checks.py) and the strict numbers of
every setting: each problem one line naming the file, the line and the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from config_helpers import error_for, write

from cosmic_curriculum.workspace.config_checks import (
    dashboard_address_problem,
    env_name_problem,
    owned_flag,
    stage_name_problem,
    stage_owned_flags,
)
from cosmic_curriculum.workspace.config_file import load_config
from cosmic_curriculum.workspace.layout import (
    EXPERIMENT_SUFFIXES,
    NAME_MAX,
    TEMP_NAME_OVERHEAD,
    candidate_name,
    experiment_name,
)

ARENA = stage_owned_flags(arena=True, candidates=1, builtin_env=False)
GYM_K3 = stage_owned_flags(arena=False, candidates=3, builtin_env=True)


@pytest.mark.parametrize(
    ("token", "owned", "expected"),
    [
        ("--timesteps", ARENA, "--timesteps"),
        ("--timesteps=5", ARENA, "--timesteps"),
        ("--time", ARENA, "--timesteps"),  # argparse expands a unique prefix
        ("--t", ARENA, "--timesteps"),
        ("--resume=x.zip", ARENA, "--resume"),
        ("--n-par", ARENA, "--n-parallel"),
        ("--speedup", ARENA, "--speedup"),
        ("--env", ARENA, None),  # an arena stage's trainer gets no --env
        ("--env={}", GYM_K3, "--env"),
        ("--seed", ARENA, None),  # K = 1: the stage's own seed
        ("--seed", GYM_K3, "--seed"),
        ("--work", GYM_K3, "--workspace"),
        ("--", ARENA, None),
        ("-t", ARENA, None),
        ("--timestepsx", ARENA, None),
        ("--opponent-mode", ARENA, None),
        ("--ent-coef", ARENA, None),
        ("5", ARENA, None),
    ],
)
def test_owned_flags_in_every_spelling(
    token: str, owned: tuple[str, ...], expected: str | None
) -> None:
    assert owned_flag(token, owned) == expected


STAGE = '[[stages]]\nname = "a"\n'
POLE = '[env]\nkind = "gymnasium"\nid = "CartPole-v1"\n'


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        (
            STAGE + 'flags = ["--timesteps", "5"]\n',
            [":3:", "stages[0].flags", "set the stage's timesteps"],
        ),
        (STAGE + 'flags = ["--opponent-mode", "inert", "--timesteps=5"]\n', ["'--timesteps=5'"]),
        (STAGE + 'flags = ["--time", "5"]\n', ["'--time' sets --timesteps"]),
        ('standing_args = ["--resume", "x.zip"]\n' + STAGE, [":1:", "standing_args", "--resume"]),
        (STAGE + 'flags = ["--speedup", "4"]\n', ["[defaults] speedup"]),
        (STAGE + 'flags = ["--n-parallel=8"]\n', ["[defaults] n_parallel"]),
        ("candidates = 2\n" + STAGE + 'flags = ["--seed", "1"]\n', ["--seed k"]),
        (POLE + STAGE + 'flags = ["--env", "{}"]\n', ["env table"]),
        (POLE + STAGE + 'flags = ["--workspace", "/tmp"]\n', ["train-env trains in the workspace"]),
    ],
)
def test_flags_the_curriculum_passes_itself_are_refused(
    tmp_path: Path, text: str, fragments: list[str]
) -> None:
    msg = error_for(tmp_path, text)
    for fragment in fragments:
        assert fragment in msg, msg


def test_flags_the_curriculum_does_not_own_are_kept(tmp_path: Path) -> None:
    text = STAGE + 'flags = ["--seed", "3", "--draw-penalty", "-5", "--", "--timesteps"]\n'
    assert load_config(write(tmp_path, text)).stages[0].flags[1] == "3"


def test_every_file_named_after_the_longest_allowed_stage_name_fits(tmp_path: Path) -> None:
    """The limit the error names is exact: at it every derived name (with the atomic
    write's temp overhead) fits NAME_MAX; one more character does not load."""
    msg = error_for(tmp_path, '[[stages]]\nname = "' + "a" * 236 + '"\n')
    assert "stages[0].name" in msg and "236 characters" in msg and "255" in msg
    limit = int(msg.rsplit("at most ", 1)[1].split()[0])
    assert load_config(write(tmp_path, '[[stages]]\nname = "' + "a" * limit + '"\n'))
    error_for(tmp_path, '[[stages]]\nname = "' + "a" * (limit + 1) + '"\n')
    for i, retries, k in [(0, 2, 1), (8, 99999, 64)]:
        name = "a" * 300
        while stage_name_problem(i, name, retries, k):
            name = name[:-1]
        exp = experiment_name(i, name, max(retries, 9999))
        exp = candidate_name(exp, k) if k > 1 else exp
        for suffix in EXPERIMENT_SUFFIXES:
            assert len(exp + suffix) + TEMP_NAME_OVERHEAD <= NAME_MAX
        assert stage_name_problem(i, name + "a", retries, k) is not None


@pytest.mark.parametrize(
    ("address", "fragment"),
    [
        ("127.0.0.1:8265", "has no scheme"),
        ("head-node", "has no scheme"),
        ("ray://127.0.0.1:10001", "Ray Client address"),
        ("tcp://127.0.0.1:8265", "scheme 'tcp'"),
        ("http://", "has the scheme"),
        ("http://127.0.0.1:8265", None),
        ("https://ray.example.org", None),
    ],
)
def test_only_a_dashboard_address_is_accepted(address: str, fragment: str | None) -> None:
    problem = dashboard_address_problem(address)
    assert (problem is None) == (fragment is None)
    if fragment is not None:
        assert problem is not None and fragment in problem and "http://" in problem


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("CUDA_VISIBLE_DEVICES", True),
        ("", False),
        ("A=B", False),
        ("COSMIC_CURRICULUM_NO_GIT", False),
    ],
)
def test_launcher_env_names(name: str, ok: bool) -> None:
    assert (env_name_problem(name) is None) == ok


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        (
            STAGE + '[launcher]\nkind = "ray"\naddress = "127.0.0.1:8265"\n',
            [":5:", "launcher.address", "no scheme"],
        ),
        (
            STAGE + '[launcher]\nkind = "ray"\naddress = "ray://h:10001"\n',
            ["launcher.address", "ray://"],
        ),
        (
            STAGE + '[launcher.env]\nCOSMIC_CURRICULUM_NO_GIT = "0"\n',
            ["launcher.env", "COSMIC_CURRICULUM_NO_GIT"],
        ),
        (STAGE + "[launcher]\nrequest_timeout = inf\n", ["launcher.request_timeout"]),
        (STAGE + "[launcher]\nrequest_timeout = 0\n", ["launcher.request_timeout"]),
        # Numbers are numbers everywhere: no string, no boolean (bools are not ints).
        (
            STAGE + '[stages.gate]\nregression_margin = "0.5"\n',
            [":4:", "stages[0].gate.regression_margin", "not a string", "without quotes"],
        ),
        (
            STAGE + '[stages.gate]\nepisodes = "40"\n',
            ["stages[0].gate.episodes", "an integer, not a string"],
        ),
        (
            STAGE + "[stages.gate]\nepisodes = true\n",
            ["stages[0].gate.episodes", "not a boolean (got true)"],
        ),
        (
            '[gate]\nrule = "sprt"\nalpha = false\n' + STAGE,
            [":3:", "gate.alpha", "not a boolean (got false)"],
        ),
        ('[gate]\nrule = "sprt"\nmax_episodes = 10.0\n' + STAGE, ["gate.max_episodes"]),
        ("eval_episodes = true\n" + STAGE, [":1:", "eval_episodes", "not a boolean"]),
        ("max_retries = false\n" + STAGE, ["max_retries", "not a boolean"]),
        ("notify_timeout = true\n" + STAGE, ["notify_timeout", "not a boolean"]),
        ("candidates = true\n" + STAGE, ["candidates", "not a boolean"]),
        ("[defaults]\ntimesteps = true\n" + STAGE, ["defaults.timesteps", "not a boolean"]),
        (STAGE + "timesteps = true\n", ["stages[0].timesteps", "not a boolean"]),
        (STAGE + "candidates = true\n", ["stages[0].candidates", "not a boolean"]),
        (STAGE + "[launcher]\nnum_gpus = true\n", ["launcher.num_gpus", "not a boolean"]),
        (STAGE + "[launcher]\nmemory = true\n", ["launcher.memory", "not a boolean"]),
        (STAGE + "[launcher]\nmax_parallel = true\n", ["launcher.max_parallel", "not a boolean"]),
        (
            STAGE + 'reference_bot = {exec = ["./b"], timeout = true}\n',
            ["timeout", "not a boolean"],
        ),
    ],
)
def test_bad_settings_get_one_line_errors(tmp_path: Path, text: str, fragments: list[str]) -> None:
    msg = error_for(tmp_path, text)
    for fragment in fragments:
        assert fragment in msg, msg


def test_gate_numbers_still_accept_ints_for_floats(tmp_path: Path) -> None:
    text = '[gate]\nrule = "threshold"\ntarget = 1\ndelta = 0.5\nmeasure = "return"\n' + STAGE
    gate = load_config(write(tmp_path, text)).stage_gate(0)
    assert gate.target == 1.0 and isinstance(gate.target, float)
