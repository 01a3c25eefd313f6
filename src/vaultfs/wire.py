"""Wire facts of the vault REST API shared by the client and the local vault.

Only constants and pure helpers live here (header names, date-time forms, limits), so
that the client and the server agree on them without importing each other.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

__all__ = [
    "API_VERSION",
    "BURST_REMAINING_HEADER",
    "DAILY_REMAINING_HEADER",
    "EXECUTION_ID_HEADER",
    "MAX_FILE_SIZE",
    "PAGE_LIMIT",
    "format_datetime",
    "format_query_datetime",
    "parse_datetime",
    "time_ns",
]

#: The API version the client speaks (the local vault serves v2.0 up to this one).
API_VERSION = "v25.1"

BURST_REMAINING_HEADER = "X-ServiceAPI-BurstLimitRemaining"
DAILY_REMAINING_HEADER = "X-ServiceAPI-DailyLimitRemaining"
EXECUTION_ID_HEADER = "X-ServiceAPI-ExecutionId"

#: Default and maximum page size of the document list.
PAGE_LIMIT = 200
#: Largest source file the API accepts (4 GB).
MAX_FILE_SIZE = 4 * 1024**3


def format_datetime(when: datetime) -> str:
    """A record date-time: ``YYYY-MM-DDTHH:MM:SS.SSSZ`` in UTC."""
    when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def format_query_datetime(when: datetime) -> str:
    """A query-parameter date-time: ``YYYY-MM-DDTHH:MM:SSZ`` in UTC."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_datetime(text: str) -> datetime:
    """Parse any of the API's date or date-time forms into an aware UTC datetime.

    Accepts ``YYYY-MM-DD`` (midnight), ``YYYY-MM-DDTHH:MM:SSZ`` and
    ``YYYY-MM-DDTHH:MM:SS.SSSZ``; raises ValueError otherwise.
    """
    text = text.strip()
    if len(text) == 10:
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def time_ns(text: Any) -> int:
    """A time of the API (any form ``parse_datetime`` reads) in nanoseconds since the
    epoch; 0 for none or one that cannot be read."""
    if not text:
        return 0
    try:
        return int(parse_datetime(str(text)).timestamp() * 1_000_000_000)
    except ValueError:
        return 0
