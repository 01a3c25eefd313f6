"""What the figures were measured on: cpu, cores, memory, kernel, python, date, load,
and the kernel's own background reclaim (DAMON), which takes pages of the page cache
(kept listings, file data) away between warm runs on machines that run it."""

from __future__ import annotations

import os
import platform
import socket
import sys
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["describe", "hostname", "load_average"]


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> str:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return f"{int(line.split()[1]) / (1 << 20):.1f} GiB"
    except OSError:
        pass
    return "unknown"


_DAMON = Path("/sys/kernel/mm/damon/admin/kdamonds")


def _damon() -> str:
    """The running DAMON reclaim schemes (``pageout``: page cache taken away while idle)."""
    try:
        states = sorted(_DAMON.glob("*/state"))
        running = [path.parent for path in states if path.read_text().strip() == "on"]
        actions = {
            action.read_text().strip()
            for kdamond in running
            for action in kdamond.glob("contexts/*/schemes/*/action")
        }
    except OSError:
        return "unknown"
    if not running:
        return "off"
    return f"on ({', '.join(sorted(actions)) or 'no scheme'})"


def hostname() -> str:
    return socket.gethostname().split(".")[0] or "host"


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def describe() -> dict[str, str]:
    """The machine as ``name -> value`` lines for the result file."""
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "host": hostname(),
        "cpu": _cpu_model(),
        "cores": str(os.cpu_count() or 0),
        "memory": _memory_gib(),
        "kernel": platform.release(),
        "python": sys.version.split()[0],
        "kernel reclaim (DAMON)": _damon(),
    }
