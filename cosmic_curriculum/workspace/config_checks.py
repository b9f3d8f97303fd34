"""Checks of `stages.toml` that need the whole file: the flags the orchestrator passes
itself (a stage's `flags` and `standing_args` must not set them behind the state's back),
and stage names whose file names would not fit the file system's name limit.

Pure rules (:func:`owned_flag`, :func:`stage_name_problem`) and one function that turns
the first problem into a pydantic error at its key (so `config_errors.describe` names the
line). Loaded only while a config is validated (``config.py`` imports it there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic_core import InitErrorDetails, PydanticCustomError, ValidationError

from cosmic_curriculum.workspace.layout import (
    NAME_MAX,
    longest_derived_name,
    max_name_part,
    name_fits,
)

if TYPE_CHECKING:
    from cosmic_curriculum.workspace.config import CurriculumConfig

# Attempts a stage may reach (retries, then `--force-retry`s): its names must fit for them.
RETRY_RESERVE = 9999

# The flags of the training command the curriculum passes itself, and where to set
# what each one carries instead.
OWNED_FLAGS: dict[str, str] = {
    "--timesteps": "set the stage's timesteps (or [defaults] timesteps, or run --timesteps)",
    "--resume": "the curriculum resumes from the previous stage's bot itself "
    "(run --seed-checkpoint for the first stage)",
    "--n-parallel": "set [defaults] n_parallel (or run --n-parallel)",
    "--speedup": "set [defaults] speedup (or run --speedup)",
    "--env": "set the stage's env table (or [env])",
    "--seed": "with candidates = K each candidate gets --seed k; remove it",
    "--workspace": "train-env trains in the workspace; remove it",
}


def stage_owned_flags(*, arena: bool, candidates: int, builtin_env: bool) -> tuple[str, ...]:
    """The flags the curriculum passes to a stage's training command."""
    owned = ["--timesteps", "--resume"]
    owned += ["--n-parallel", "--speedup"] if arena else ["--env"]
    if candidates > 1:
        owned.append("--seed")
    if builtin_env:
        owned.append("--workspace")
    return tuple(owned)


def owned_flag(token: str, owned: tuple[str, ...]) -> str | None:
    """The owned flag ``token`` sets: itself, its ``--flag=value`` form, or a prefix
    argparse would expand to it (``--time``); None for anything else."""
    if not token.startswith("--") or token == "--":
        return None
    name = token.partition("=")[0]
    for flag in owned:
        if flag == name or (len(name) > 2 and flag.startswith(name)):
            return flag
    return None


def stage_name_problem(stage_index: int, name: str, retries: int, candidates: int) -> str | None:
    """Why stage ``name``'s file names cannot exist (too long for NAME_MAX), else None."""
    from cosmic_curriculum.workspace.layout import candidate_name, experiment_name

    worst = experiment_name(stage_index, name, max(retries, RETRY_RESERVE))
    if candidates > 1:
        worst = candidate_name(worst, candidates)
    if name_fits(longest_derived_name(worst)):
        return None
    limit = max_name_part(len(worst) - len(name))
    shown = name if len(name) <= 40 else f"{name[:20]}...{name[-8:]}"
    return (
        f"stage name {shown!r} is {len(name)} characters: the files named after it in "
        f"bots/, logs/ and checkpoints/ would exceed the file system's limit of "
        f"{NAME_MAX} bytes a name; shorten it to at most {limit} characters"
    )


def _error(loc: tuple[str | int, ...], message: str) -> ValidationError:
    detail = InitErrorDetails(
        type=PydanticCustomError("value_error", "{message}", {"message": message}),
        loc=loc,
        input=None,  # the message quotes the value itself
    )
    return ValidationError.from_exception_data("CurriculumConfig", [detail])


def check_whole_config(config: CurriculumConfig) -> None:
    """Raise a ValidationError at the first owned flag, overlong stage name, [launcher]
    problem (launcher_checks), address that is not a dashboard's or [launcher.env] name
    that is not the user's to set (and the trainer tables, whose module loads only for a
    file that has one)."""
    if config.trainer is not None or any(s.trainer is not None for s in config.stages):
        from cosmic_curriculum.workspace.trainer_config import check_trainer_stages

        check_trainer_stages(config)
    from cosmic_curriculum.workspace.launcher_checks import launcher_problem

    launcher = config.launcher
    if (found := launcher_problem(config)) is not None:
        raise _error(*found)
    problem = launcher.address and dashboard_address_problem(launcher.address)
    if problem:
        raise _error(("launcher", "address"), f"{problem} (got {launcher.address!r})")
    for name in launcher.env:
        problem = env_name_problem(name)
        if problem:
            raise _error(("launcher", "env"), problem)
    for i, stage in enumerate(config.stages):
        candidates = config.stage_candidates(i)
        problem = stage_name_problem(i, stage.name, config.max_retries, candidates)
        if problem:
            raise _error(("stages", i, "name"), problem)
        owned = stage_owned_flags(
            arena=config.stage_env(i).kind == "arena",
            candidates=candidates,
            builtin_env=config.builtin_env_trainer(i),
        )
        sources: list[tuple[tuple[str | int, ...], list[str]]] = [
            (("stages", i, "flags"), list(stage.flags)),
            (("standing_args",), config.stage_standing_args(i)),
        ]
        for loc, tokens in sources:
            for token in tokens[: tokens.index("--") if "--" in tokens else None]:
                flag = owned_flag(token, owned)
                if flag is not None:
                    raise _error(
                        loc,
                        f"{token!r} sets {flag}, which the curriculum passes itself "
                        f"(stage {stage.name!r}); {OWNED_FLAGS[flag]}",
                    )


def dashboard_address_problem(address: str) -> str | None:
    """Why ``address`` is not a Ray dashboard's (Jobs API) address, else None. Ray reads
    an address without a scheme as its GCS and ``ray://`` as its client port: both connect
    through Ray's own machinery, which waits about 40 s and logs before it fails."""
    scheme, sep, rest = address.partition("://")
    if sep and scheme in ("http", "https") and rest.strip("/"):
        return None
    host = rest if sep else address
    fix = f'write the dashboard\'s Jobs API address, e.g. "http://{host or "HOST"}"'
    if not sep:
        why = "has no scheme (Ray would read it as its GCS address)"
    elif scheme == "ray":
        why = "is a Ray Client address (ray://); the launcher talks to the dashboard"
        fix = 'write the dashboard\'s Jobs API address, e.g. "http://HEAD:8265"'
    else:
        why = f"has the scheme {scheme!r}"
    return f"{why}; {fix}"


# Variables the curriculum sets for its commands ([launcher.env] must not change them).
OWN_ENV_PREFIX = "COSMIC_CURRICULUM_"


def env_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a variable of [launcher.env], else None."""
    if not name or "=" in name or "\0" in name:
        return f"{name!r} is not an environment variable's name (empty, '=' or NUL); rename it"
    if name.startswith(OWN_ENV_PREFIX):
        return (
            f"{name!r}: the curriculum sets the {OWN_ENV_PREFIX}* variables of its commands "
            "itself; remove it"
        )
    return None
