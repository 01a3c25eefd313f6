"""How figures are taken: timed runs, medians, cold page caches, a process's memory.

Every time is ``time.perf_counter`` around the measured work; a measurement taken
several times is reported as its median.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "READ_SIZE",
    "ReadTiming",
    "RssSampler",
    "can_drop_caches",
    "cpu_seconds",
    "drop_caches",
    "median",
    "read_file",
    "rss_kib",
    "timed_run",
]

_DROP_CACHES = Path("/proc/sys/vm/drop_caches")
#: the read size of the sequential reader (what cp and cat use on Linux)
READ_SIZE = 1 << 17


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def timed_run(argv: Sequence[str]) -> float:
    """Seconds ``argv`` took; its output is discarded, a failure raises."""
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
    return time.perf_counter() - started


def can_drop_caches() -> bool:
    return os.geteuid() == 0 and os.access(_DROP_CACHES, os.W_OK)


def drop_caches() -> None:
    """Empty the kernel's page cache (root only; nothing happens otherwise)."""
    if can_drop_caches():
        os.sync()
        _DROP_CACHES.write_text("3\n")


@dataclass
class ReadTiming:
    first_byte: float
    total: float
    size: int


def read_file(path: Path) -> ReadTiming:
    """Open ``path`` and read it to EOF in 128 KiB reads, as cat does; the open and the
    first read are timed separately, for the time to first byte."""
    started = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    try:
        size = len(os.read(fd, READ_SIZE))
        first_byte = time.perf_counter() - started
        while chunk := os.read(fd, READ_SIZE):
            size += len(chunk)
    finally:
        os.close(fd)
    return ReadTiming(first_byte, time.perf_counter() - started, size)


def _rss_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rss_kib(pid: int) -> int:
    """The resident memory (VmRSS) of process ``pid`` now."""
    return _rss_kib(pid, "VmRSS")


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds process ``pid`` used so far (``/proc/PID/stat``)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of stat(5), the 12th and 13th after ")"
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RssSampler:
    """Samples a process's resident memory (VmRSS) every few ms in a thread."""

    def __init__(self, pid: int, interval: float = 0.01) -> None:
        self.pid = pid
        self.interval = interval
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak_kib = max(self.peak_kib, _rss_kib(self.pid, "VmRSS"))
            except OSError:
                return
            self._stop.wait(self.interval)

    def high_water_kib(self) -> int:
        """The kernel's own peak (VmHWM) over the process's whole life."""
        return _rss_kib(self.pid, "VmHWM")

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
