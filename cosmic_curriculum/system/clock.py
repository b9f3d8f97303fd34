"""The time stamps the workspace's files record: UTC, ISO 8601, to the second."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
