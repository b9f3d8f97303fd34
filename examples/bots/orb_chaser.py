#!/usr/bin/env python3
"""A tiny external bot in plain Python (no dependencies): gets behind the orb, pushes it.

Speaks the cosmic-bot/1 protocol (docs/BOT_FORMAT.md): one handshake line, then one
answer line per request. Run it as an opponent: ``exec:python3 examples/bots/orb_chaser.py``.
Only body-frame fields are used (observation indices 27-29: orb minus own position,
36-38: goal to attack minus own position; forward, left, up), so it plays either colour.
"""

import json
import math
import sys

BEHIND = 0.06  # line up this far behind the orb (arena diagonals)
ON_LINE = 0.03  # push once this close to the orb-to-goal line


def clip(value):
    return max(-1.0, min(1.0, value))


def decide(obs):
    orb = obs[27:30]
    goal = obs[36:39]
    line = [goal[i] - orb[i] for i in range(3)]
    norm = math.sqrt(sum(v * v for v in line)) or 1.0
    u = [v / norm for v in line]  # unit vector orb -> goal, body frame
    ahead = sum(orb[i] * u[i] for i in range(3))  # > 0: the orb is between us and the goal
    off = [ahead * u[i] - orb[i] for i in range(3)]  # our offset from the orb-goal line
    on_line = ahead > 0 and math.sqrt(sum(v * v for v in off)) < ON_LINE
    side = 1.0 if on_line else -1.0  # push through the orb, or get behind it first
    target = [orb[i] + side * BEHIND * u[i] for i in range(3)]
    bearing = math.atan2(target[1], target[0])
    thrust = 1.0 if abs(bearing) < 0.5 else 0.3
    return [thrust, clip(3 * target[1]), clip(8 * target[2]), clip(3 * bearing), 0.0, 0.0]


def main():
    hello = {
        "protocol": "cosmic-bot/1",
        "observation_size": 43,
        "action_size": 6,
        "decision_ticks": 8,
        "name": "orb-chaser (python)",
    }
    sys.stdout.write(json.dumps(hello) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:  # ends when the host closes our stdin
        request = json.loads(line)
        actions = [decide(obs) for obs in request["obs"]]
        sys.stdout.write(json.dumps({"actions": actions}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
