"""A program player of env kinds for tests: ``fake_env_bot.py MODE``.

It reads the tool's opening message and declares its spaces back (``mismatch``: a
Discrete action space of 5 instead; ``arena``: the arena's handshake, without reading).
Each game's answer (mode ``ok``) is its first legal action (all actions of the space
when the request has no ``legal``); ``illegal`` answers the first action that is not
legal (one past the space when all are), ``garbage`` answers ``{"moves": ...}``,
``fallback`` reports game 0 as a fallback every request and ``bad_fallbacks`` reports
row 99. Never imports numpy.
"""

from __future__ import annotations

import json
import sys


def send(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> None:
    mode = sys.argv[1]
    if mode == "arena":
        send(
            {
                "protocol": "cosmic-bot/1",
                "observation_size": 43,
                "action_size": 6,
                "decision_ticks": 16,
            }
        )
    opening = json.loads(sys.stdin.readline())
    space = opening["action_space"]
    declared = {"type": "Discrete", "n": 5, "start": 0} if mode == "mismatch" else space
    send(
        {
            "protocol": "cosmic-bot/1",
            "observation_space": opening["observation_space"],
            "action_space": declared,
            "name": f"fake {mode}",
        }
    )
    every = list(range(space["start"], space["start"] + space["n"]))
    for line in sys.stdin:
        request = json.loads(line)
        legal = request.get("legal") or [every] * len(request["obs"])
        if mode == "illegal":
            # the first move that is not legal; past the space's end when all are
            actions = [min(set(every) - set(moves), default=every[-1] + 1) for moves in legal]
        else:
            actions = [moves[0] for moves in legal]
        reply: dict[str, object] = {"actions": actions}
        if mode == "garbage":
            reply = {"moves": actions}
        if mode == "fallback":
            reply["fallbacks"] = [0]
        if mode == "bad_fallbacks":
            reply["fallbacks"] = [99]
        send(reply)


if __name__ == "__main__":
    main()
