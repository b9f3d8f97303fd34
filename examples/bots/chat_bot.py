#!/usr/bin/env python3
"""A cosmic-bot/1 program that lets a chat model play a turn-based game (Discrete actions).

It speaks the protocol for env kinds (docs/BOT_FORMAT.md, "Programs for env kinds"): it
reads the tool's opening message, declares the env's own spaces back, then for every
game of every request asks an OpenAI-compatible endpoint (``POST {base}/v1/chat/
completions`` with ``model`` and ``messages``) for a move, showing it the observation and
the legal actions (all actions of the space when the game has no mask). The first whole
number in the reply is its move; it must be one of the legal actions.

A reply that cannot be used (no number, an illegal one, an HTTP error, no answer within
``--timeout``) is, with ``--on-bad-reply fallback`` (the default), replaced by a random
legal action from a seeded generator (``--seed``): the answer lists that game's row in
``"fallbacks"``, the tool counts them (``reference_fallbacks`` in the evaluation record)
and the reason goes to stderr. With ``--on-bad-reply error`` the program stops with the
reason on stderr and exit status 3, which the tool reports in one line, with no record.

    evaluate bots/lake.json "exec:python3 examples/bots/chat_bot.py --model my-model"
    stages.toml:  reference_bot = {exec = ["python3", "examples/bots/chat_bot.py"], timeout = 60}

Settings: ``--base-url`` (else $CHAT_BASE_URL, else http://127.0.0.1:8000), ``--model``
(else $CHAT_MODEL), the API key only from $CHAT_API_KEY or $OPENAI_API_KEY (never on the
command line, which records name), ``--timeout`` seconds per HTTP call, ``--parallel``
calls at once. The games of one request are asked in parallel, so one request takes up to
ceil(games / parallel) x timeout: keep that below the tool's ``--bot-timeout``. Only the
standard library is used.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

PROTOCOL = "cosmic-bot/1"
BAD_REPLY = 3  # exit status under --on-bad-reply error
NUMBER = re.compile(r"-?\d+")
MAX_REPLY_BYTES = 1 << 20  # of one HTTP response
SYSTEM_PROMPT = (
    "You play the game {env} as one player. Each turn you get the observation as JSON and "
    "the list of legal actions. Answer with the number of your action and nothing else."
)


class BadReply(Exception):
    """A reply the bot cannot play: its reason, for stderr."""


def say(text: str) -> None:
    print(f"chat_bot: {text}", file=sys.stderr, flush=True)


def send(doc: object) -> None:
    sys.stdout.write(json.dumps(doc, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default=os.environ.get("CHAT_BASE_URL", ""))
    parser.add_argument("--model", default=os.environ.get("CHAT_MODEL", ""))
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per HTTP call")
    parser.add_argument("--parallel", type=int, default=8, help="HTTP calls at once")
    parser.add_argument("--on-bad-reply", choices=("fallback", "error"), default="fallback")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fallback moves")
    parser.add_argument("--temperature", type=float, default=0.0)
    args = parser.parse_args()
    args.base_url = (args.base_url or "http://127.0.0.1:8000").rstrip("/")
    if not args.model:
        parser.error("name the model: --model NAME or CHAT_MODEL")
    if not args.timeout > 0 or args.parallel < 1:
        parser.error("--timeout must be > 0 and --parallel >= 1")
    return args


def ask(args: argparse.Namespace, env: str, obs: object, legal: list[int]) -> int:
    """The model's move for one game, or BadReply saying why there is none."""
    body = {
        "model": args.model,
        "temperature": args.temperature,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT.format(env=env)},
            {
                "role": "user",
                "content": f"Observation: {json.dumps(obs)}\nLegal actions: {legal}\nYour action:",
            },
        ],
    }
    headers = {"Content-Type": "application/json"}
    key = os.environ.get("CHAT_API_KEY") or os.environ.get("OPENAI_API_KEY")
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(
        f"{args.base_url}/v1/chat/completions",
        data=json.dumps(body).encode(),
        method="POST",
        headers=headers,
    )
    try:
        with urllib.request.urlopen(request, timeout=args.timeout) as response:
            raw = response.read(MAX_REPLY_BYTES)
    except urllib.error.HTTPError as exc:
        raise BadReply(f"the endpoint answered HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:  # refused, reset, timed out
        reason = getattr(exc, "reason", exc)
        raise BadReply(f"no answer from {args.base_url} ({reason})") from None
    try:
        content = json.loads(raw)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise BadReply("the endpoint's answer is not a chat completion") from None
    if not isinstance(content, str):
        raise BadReply("the chat completion has no text content")
    found = NUMBER.search(content)
    shown = json.dumps(content[:80])
    if found is None:
        raise BadReply(f"reply {shown} holds no number")
    move = int(found.group())
    if move not in legal:
        raise BadReply(f"reply {shown} names {move}, not among the legal actions {legal}")
    return move


def main() -> int:
    args = options()
    opening = json.loads(sys.stdin.readline() or "null")
    if not isinstance(opening, dict) or "action_space" not in opening:
        say("no opening message with the env's spaces: run me for an env kind's stage")
        return 2
    space = opening["action_space"]
    if space.get("type") != "Discrete":
        say(f"plays Discrete actions only; env {opening.get('env')!r} has {space.get('type')}")
        return 2
    env = str(opening.get("env"))
    everything = list(range(space.get("start", 0), space.get("start", 0) + space["n"]))
    send(
        {
            "protocol": PROTOCOL,
            "observation_space": opening["observation_space"],
            "action_space": space,
            "name": f"chat:{args.model}",
        }
    )
    rng = random.Random(args.seed)
    pool = ThreadPoolExecutor(max_workers=args.parallel)
    for requests, line in enumerate(sys.stdin, start=1):
        message = json.loads(line)
        rows = message["obs"]
        legal = message.get("legal") or [everything] * len(rows)
        tries = [pool.submit(ask, args, env, obs, legal[i]) for i, obs in enumerate(rows)]
        actions, fallbacks = [], []
        for i, attempt in enumerate(tries):  # in row order: the fallbacks replay per seed
            try:
                actions.append(attempt.result())
            except BadReply as exc:
                if args.on_bad_reply == "error":
                    say(f"request {requests}, game {i}: {exc}")
                    return BAD_REPLY
                move = rng.choice(legal[i])
                say(f"request {requests}, game {i}: {exc}; played {move} (random fallback)")
                actions.append(move)
                fallbacks.append(i)
        send({"actions": actions, "fallbacks": fallbacks})
    pool.shutdown(wait=False, cancel_futures=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
