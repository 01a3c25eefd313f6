"""Logging of the bridge's commands: where lines go and what they look like.

Owns the one logging setup of a ``vaultfs`` process. Every record is one line, so a
log reader (or the journal) sees one event per line; a traceback is folded into that
line. Under systemd (``$JOURNAL_STREAM`` or ``$INVOCATION_ID`` set) and logging to
stderr, lines carry no timestamp (the journal adds its own) and start with the
``<N>`` syslog priority prefix journald reads the level from. Elsewhere, and always
in a log file, lines start with the time.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

__all__ = ["OneLineFormatter", "setup_logging", "stderr_is_journal", "under_systemd"]

#: syslog priorities of the logging levels (journald's ``<N>`` line prefix)
_PRIORITY = {
    logging.CRITICAL: 2,
    logging.ERROR: 3,
    logging.WARNING: 4,
    logging.INFO: 6,
    logging.DEBUG: 7,
}


def under_systemd() -> bool:
    """Whether this process runs as (or under) a systemd unit."""
    return bool(os.environ.get("JOURNAL_STREAM") or os.environ.get("INVOCATION_ID"))


def stderr_is_journal() -> bool:
    """Whether stderr itself is the journal (``$JOURNAL_STREAM`` names its device and
    inode; a shell started from a service inherits the variable with another stderr)."""
    device, _, inode = os.environ.get("JOURNAL_STREAM", "").partition(":")
    try:
        st = os.fstat(2)
        return (st.st_dev, st.st_ino) == (int(device), int(inode))
    except (OSError, ValueError):
        return False


class OneLineFormatter(logging.Formatter):
    """A formatter that keeps every record on one line (tracebacks included)."""

    def __init__(self, fmt: str, *, journal: bool) -> None:
        super().__init__(fmt)
        self._journal = journal

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record).replace("\n", " | ")
        if self._journal:
            return f"<{_PRIORITY.get(record.levelno, 6)}>{line}"
        return line


def setup_logging(level: str, log_file: Path | None) -> None:
    """Send every log record of this process to ``log_file`` (mode 0600) or stderr."""
    handler: logging.Handler
    journal = False
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(log_file)
        os.chmod(log_file, 0o600)
    else:
        handler = logging.StreamHandler()
        journal = under_systemd()
    # The journal has its own time and reads the level from the prefix.
    fmt = "%(name)s: %(message)s" if journal else "%(asctime)s %(levelname)s %(name)s: %(message)s"
    handler.setFormatter(OneLineFormatter(fmt, journal=journal))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # httpx logs request URLs at INFO, and its DEBUG lines would show headers; the
    # client traces its own calls (method, path template, status, duration) instead.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpcore").setLevel(logging.WARNING)
