"""A fake training command honouring the trainer contract, with scripted behaviour.

Usage (the contract): ``fake_trainer.py EXPERIMENT --timesteps N --n-parallel N
--speedup N [flags...] [--resume CHECKPOINT]``, run in the workspace.

Behaviour comes from the JSON file named by ``FAKE_TRAINER_SCRIPT`` (if set): an object
mapping experiment names (or ``"*"``) to settings:
``mode``: ``ok`` (default) | ``fail`` (exit 3 after some output) | ``hang`` (never ends) |
``no_artifacts`` (exit 0 without final.zip/bot) | ``corrupt_bot`` (bot is not JSON) |
``fail_once`` (fail the first run of this experiment, succeed afterwards) | ``killed``
(SIGKILLs itself after some output, like the kernel's OOM killer) | ``pause_once`` (the
first run of this experiment records ``paused`` after two steps and waits for a signal,
as a training a scheduler or a machine's shutdown is about to end; later runs are ``ok``);
``steps`` (progress updates, default 4); ``step_seconds`` (default 0.02);
``bot_source`` (copy this bot file as the result, e.g. a real bot for the built-in
evaluator); ``hold_until`` (a path: after its steps the trainer waits until that file
exists before it writes its result, so a test decides how long it outlives a run).

Every run appends ``{"event": "start"|"done", "experiment", "resume", "argv", "pid"}`` to
``fake_runs.jsonl`` in the workspace so tests can count trainings (and ``overlap`` when
another run of the same experiment is alive: two trainers at once). SIGTERM and SIGUSR1
are honoured as a real trainer does: exit 128 + the signal promptly (its step checkpoints
are on disk).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sys
import time
from pathlib import Path


def record(event: str, **fields: object) -> None:
    with open("fake_runs.jsonl", "a") as fh:
        fh.write(json.dumps({"event": event, "pid": os.getpid(), **fields}) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def option(argv: list[str], name: str) -> str | None:
    if name in argv:
        return argv[argv.index(name) + 1]
    return None


def main() -> int:
    argv = sys.argv[1:]
    exp = argv[0]
    total = int(option(argv, "--timesteps") or 1000)
    resume = option(argv, "--resume")
    script: dict[str, dict[str, object]] = {}
    if os.environ.get("FAKE_TRAINER_SCRIPT"):
        script = json.loads(Path(os.environ["FAKE_TRAINER_SCRIPT"]).read_text())
    cfg = {**script.get("*", {}), **script.get(exp, {})}
    mode = str(cfg.get("mode", "ok"))
    steps = int(cfg.get("steps", 4))  # type: ignore[call-overload]
    step_seconds = float(cfg.get("step_seconds", 0.02))  # type: ignore[arg-type]
    runs_before = 0
    if Path("fake_runs.jsonl").exists():
        for line in Path("fake_runs.jsonl").read_text().splitlines():
            entry = json.loads(line)
            if entry["event"] == "start" and entry["experiment"] == exp:
                runs_before += 1
    if mode in ("fail_once", "pause_once"):
        mode = mode.removesuffix("_once") if runs_before == 0 else "ok"
    for sig in (signal.SIGTERM, signal.SIGUSR1):
        signal.signal(sig, lambda signum, _: sys.exit(128 + signum))
    ckpt = Path("checkpoints") / exp
    ckpt.mkdir(parents=True, exist_ok=True)
    # Held while this run lives; beside the scripts, outside the workspace's files.
    scripts = Path(os.environ.get("FAKE_TRAINER_SCRIPT", "checkpoints/-")).parent
    alive = open(scripts / f"{exp}.alive", "w")  # noqa: SIM115
    try:
        fcntl.flock(alive, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        record("overlap", experiment=exp)
    record("start", experiment=exp, resume=resume, argv=argv)
    print(f"fake trainer: {exp} resume={resume} total={total}", flush=True)
    start_step = 0
    if resume and Path(resume).name.startswith("step_") and Path(resume).parent == ckpt:
        start_step = int(Path(resume).stem.split("_")[1])
    i = 0
    while True:
        i += 1
        done = start_step + i * max(1, total // steps)
        time.sleep(step_seconds)
        print(
            "@progress "
            + json.dumps(
                {"timesteps": min(done, total), "total": total, "fps": 1000.0, "reward": 0.1 * i}
            ),
            flush=True,
        )
        (ckpt / f"step_{min(done, total)}.zip").write_bytes(b"PK fake checkpoint")
        spool = os.environ.get("COSMIC_TRACKING_SCALARS")  # as SB3's logger would dump
        if spool:
            with open(spool, "a") as fh:
                line = {"kind": "scalars", "key": exp, "step": min(done, total)}
                fh.write(json.dumps({**line, "metrics": {"train/fake_loss": 1.0 / i}}) + "\n")
        if mode == "fail" and i >= 2:
            print("fake trainer: simulated crash: CUDA out of memory", flush=True)
            return 3
        if mode == "killed" and i >= 2:
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "pause" and i == 2:
            record("paused", experiment=exp, step=min(done, total))
            while True:
                time.sleep(60)  # until the signal that ends it (exit 128 + signal)
        if mode != "hang" and done >= total:
            break
    hold = cfg.get("hold_until")
    deadline = time.monotonic() + 300.0  # never an immortal process if a test forgets it
    while hold and not Path(str(hold)).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    if mode == "no_artifacts":
        print("fake trainer: finished without artefacts", flush=True)
        return 0
    (ckpt / "final.zip").write_bytes(b"PK fake final")
    bot = Path("bots") / f"{exp}.json"
    bot.parent.mkdir(exist_ok=True)
    if cfg.get("bot_source"):
        bot.write_bytes(Path(str(cfg["bot_source"])).read_bytes())
    elif mode == "corrupt_bot":
        bot.write_text("{not json")
    else:
        bot.write_text(json.dumps({"kind": "fake", "experiment": exp, "timesteps": total}) + "\n")
    record("done", experiment=exp, resume=resume)
    return 0


if __name__ == "__main__":
    sys.exit(main())
