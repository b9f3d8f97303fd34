"""A misbehaving external bot for tests: ``fake_bot.py MODE [PIDFILE]``.

Modes: ``ok`` (inert answers), ``silent`` (no handshake), ``hang`` (handshake, then never
answers), ``garbage`` (answers a line that is not JSON), ``shape`` (5 actions per game),
``nan`` (a NaN action), ``range`` (an action of 1.5), ``strings`` (actions as strings),
``exit`` (exits with status 3 in its second request after a word on stderr), ``huge``
(an endless line), ``flood`` (megabytes on stderr every request, answers fine),
``protocol`` (handshake of protocol cosmic-bot/9), ``obs_size`` (handshake with 42),
``stubborn`` (starts a sleeping child, ignores SIGTERM and EOF, answers fine).
Writes its pid (and its child's) to PIDFILE, one per line. Never imports numpy.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time


def send(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> None:
    mode = sys.argv[1]
    pids = [os.getpid()]
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        pids.append(child.pid)
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as fh:
            fh.write("\n".join(map(str, pids)) + "\n")
    if mode == "silent":
        time.sleep(300)
    hello = {"protocol": "cosmic-bot/1", "observation_size": 43, "action_size": 6}
    hello.update({"decision_ticks": 16, "name": f"fake {mode}"})
    if mode == "protocol":
        hello["protocol"] = "cosmic-bot/9"
    if mode == "obs_size":
        hello["observation_size"] = 42
    send(hello)
    requests = 0
    for line in sys.stdin:
        requests += 1
        n = len(json.loads(line)["obs"])
        actions: list[list[object]] = [[0.0] * 6 for _ in range(n)]
        if mode == "hang":
            time.sleep(300)
        elif mode == "garbage":
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
            continue
        elif mode == "shape":
            actions = [[0.0] * 5 for _ in range(n)]
        elif mode == "nan":
            sys.stdout.write('{"actions": [[NaN, 0, 0, 0, 0, 0]]}\n')
            sys.stdout.flush()
            continue
        elif mode == "range":
            actions[0][0] = 1.5
        elif mode == "strings":
            actions[0][0] = "0.5"
        elif mode == "exit" and requests == 2:
            sys.stderr.write("fake bot: something broke\n")
            sys.stderr.flush()
            sys.exit(3)
        elif mode == "huge":
            chunk = "1" * 65536
            while True:
                sys.stdout.write(chunk)
        elif mode == "flood":
            sys.stderr.write(("x" * 1023 + "\n") * 256)  # 256 KiB: 4 pipe buffers
            sys.stderr.flush()
        send({"actions": actions})
    if mode == "stubborn":
        time.sleep(300)


if __name__ == "__main__":
    main()
