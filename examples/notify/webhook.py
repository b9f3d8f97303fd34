#!/usr/bin/env python3
"""Post a cosmic-curriculum notification to a chat webhook (Slack, Discord, Mattermost,
ntfy, ...) as one JSON object: {"text": ..., "content": ..., "event": {the notification}}.
Slack and Mattermost show "text", Discord shows "content"; "event" is the whole object.

    stages.toml:  notify_command = ["examples/notify/webhook.sh"]   (or this file)
    environment:  COSMIC_WEBHOOK_URL=https://hooks.slack.com/services/...

The body is built by a JSON encoder, so any message (quotes, backslashes, control
characters, any Unicode) is valid JSON. Exit status, as cosmic-curriculum reads it:
0 delivered; 65 the webhook refused this very notification (an HTTP 4xx other than 408,
425 and 429): it is dropped and the next ones are sent; anything else (no URL, no
network, a 5xx, a timeout) is for now: the notification stays queued and is sent again
by the next run, a bounded number of times. Only the standard library is used.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request

REFUSED = 65  # sysexits' EX_DATAERR: this note, never again
TEMPORARY = 75  # sysexits' EX_TEMPFAIL: try again later
RETRYABLE_4XX = {408, 425, 429}  # timeout, too early, too many requests
TIMEOUT_SECONDS = 20


def one_line(text: str) -> str:
    """Line breaks and tabs flattened: a chat message of one line."""
    return " ".join(text.replace("\r", " ").replace("\t", " ").splitlines())


def main() -> int:
    url = os.environ.get("COSMIC_WEBHOOK_URL")
    if not url:
        print("webhook.sh: set COSMIC_WEBHOOK_URL to the webhook URL", file=sys.stderr)
        return 1
    raw = sys.stdin.buffer.read()
    try:
        event = json.loads(raw)
    except ValueError as exc:
        print(f"webhook.sh: the notification on stdin is not JSON ({exc})", file=sys.stderr)
        return REFUSED
    workspace = os.path.basename(str(event.get("workspace") or "").rstrip("/"))
    text = one_line(
        f"[{event.get('event')}] {workspace}: {event.get('message')} (next: {event.get('next')})"
    )
    body = json.dumps({"text": text, "content": text, "event": event}).encode()
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            response.read(65536)
    except urllib.error.HTTPError as exc:
        refused = 400 <= exc.code < 500 and exc.code not in RETRYABLE_4XX
        how = "refused the notification" if refused else "failed for now"
        print(f"webhook.sh: the webhook {how}: HTTP {exc.code} {exc.reason}", file=sys.stderr)
        return REFUSED if refused else TEMPORARY
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        print(f"webhook.sh: cannot reach the webhook: {reason}", file=sys.stderr)
        return TEMPORARY
    return 0


if __name__ == "__main__":
    sys.exit(main())
