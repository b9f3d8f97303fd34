"""A fake evaluation command honouring the evaluation contract, with scripted outcomes.

Usage: ``fake_evaluator.py CANDIDATE REFERENCE --episodes N`` in the workspace. Appends
one record ``{wins_a, wins_b, draws, episodes, candidate, reference}`` to
``eval_history.json``. Outcomes come from the JSON file named by ``FAKE_EVAL_SCRIPT``: an
object mapping a candidate bot's stem (experiment name) or ``"*"`` to ``"pass"``,
``"fail"``, ``"boundary"`` (a gap of exactly the 0.15 margin: a fail), ``"error"``
(exit 4 without a record), explicit ``[wins_a, wins_b, draws]`` or an object of keys
added to the record (``{"successes": 1}``: counts the margin rule passes, and what the
threshold gate reads; ``"drop": [keys]`` leaves those keys out); ``"<stem>#<n>"`` is
the outcome of that candidate's n-th evaluation (from 1) and comes first. ``"sleep"``
(seconds) delays the evaluation; ``"until"`` (a path) holds it until that file exists (at
most 300 s), so a test decides when it ends. ``{"stream": [episode lines],
"stop_after": n}`` streams the episodes to ``COSMIC_CURRICULUM_EVAL_STREAM`` and stops
at the stop file. Each run appends ``{candidate, reference, argv, deterministic}`` (the
last from ``COSMIC_CURRICULUM_EVAL_DETERMINISTIC``) to ``fake_evals.jsonl``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def main() -> int:
    candidate, reference = sys.argv[1], sys.argv[2]
    episodes = int(sys.argv[sys.argv.index("--episodes") + 1])
    script: dict[str, object] = {}
    if os.environ.get("FAKE_EVAL_SCRIPT"):
        script = json.loads(Path(os.environ["FAKE_EVAL_SCRIPT"]).read_text())
    stem = Path(candidate).stem
    earlier = 0
    if Path("fake_evals.jsonl").exists():
        for line in Path("fake_evals.jsonl").read_text().splitlines():
            earlier += json.loads(line)["candidate"] == candidate
    outcome = script.get(f"{stem}#{earlier + 1}", script.get(stem, script.get("*", "pass")))
    time.sleep(float(str(script.get("sleep", 0))))
    if script.get("until"):
        deadline = time.monotonic() + 300
        while not Path(str(script["until"])).exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    with open("fake_evals.jsonl", "a") as fh:
        entry = {
            "candidate": candidate,
            "reference": reference,
            "argv": sys.argv[1:],
            "deterministic": os.environ.get("COSMIC_CURRICULUM_EVAL_DETERMINISTIC"),
        }
        fh.write(json.dumps(entry) + "\n")
    if outcome == "error":
        print("fake evaluator: crashed", file=sys.stderr)
        return 4
    if outcome == "pass":
        wins_a, wins_b = episodes // 2, episodes // 2 - episodes // 10
    elif outcome == "fail":
        wins_a, wins_b = episodes // 10, episodes // 2
    elif outcome == "boundary":
        # reference - candidate == 0.15 exactly: the margin rule fails it
        wins_a, wins_b = episodes * 30 // 100, episodes * 45 // 100
    elif isinstance(outcome, dict):  # {"successes": s}: the threshold gate's record
        wins_a, wins_b = episodes // 2, episodes // 2 - episodes // 10  # margin: a pass
    else:
        wins_a, wins_b, _ = outcome  # type: ignore[misc]
    draws = episodes - wins_a - wins_b
    streamed = outcome.get("stream") if isinstance(outcome, dict) else None
    if streamed and os.environ.get("COSMIC_CURRICULUM_EVAL_STREAM"):
        outcome = dict(outcome) | _stream(streamed, episodes, int(outcome.get("stop_after", 0)))
        wins_a, wins_b, draws = outcome["wins_a"], outcome["wins_b"], outcome["draws"]
        episodes = outcome["episodes"]
    path = Path("eval_history.json")
    records = json.loads(path.read_text()) if path.exists() else []
    record = {
        "wins_a": wins_a,
        "wins_b": wins_b,
        "draws": draws,
        "episodes": episodes,
        "candidate": candidate,
        "reference": reference,
    } | (outcome if isinstance(outcome, dict) else {})
    for key in ("stream", "stop_after"):
        record.pop(key, None)
    for key in record.pop("drop", []):  # e.g. a threshold record without wins/draws
        record.pop(key, None)
    records.append(record)
    tmp = path.with_name(".eval_history.json.tmp-fake")
    tmp.write_text(json.dumps(records, indent=2) + "\n")
    os.replace(tmp, path)
    return 0


def _stream(lines: list[dict[str, object]], episodes: int, stop_after: int) -> dict[str, object]:
    """Stream the episodes (``lines`` cycled) one by one as the contract says, stopping when
    the curriculum makes the stop file; after episode ``stop_after`` wait for it (up to
    30 s), so a test knows where the gate must have decided. The record's counts."""
    stream = Path(os.environ["COSMIC_CURRICULUM_EVAL_STREAM"])
    stop = Path(os.environ["COSMIC_CURRICULUM_EVAL_STOP"])
    played: list[dict[str, object]] = []
    for i in range(episodes):
        if stop.exists():
            break
        line = lines[i % len(lines)]
        played.append(line)
        with stream.open("a") as fh:
            fh.write(json.dumps(line) + "\n")
        if i + 1 == stop_after:
            for _ in range(300):
                if stop.exists():
                    break
                time.sleep(0.1)
    results = [p.get("result") for p in played]
    return {
        "wins_a": results.count(1),
        "wins_b": results.count(-1),
        "draws": results.count(0),
        "episodes": len(played),
        "successes": sum(bool(p.get("success")) for p in played),
        "streamed": True,
    }


if __name__ == "__main__":
    sys.exit(main())
