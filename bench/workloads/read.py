"""Sequential read of the big document: cold, warm, time to first byte, daemon memory.

Cold: every run is a new mount with a fresh cache, and the page cache is dropped before
it and before every curl run (so the server reads its blob from disk on both sides).
Warm, two figures: the first read again after a cold read, and further reads. The cold
read fills the kernel's page cache (its open knows the exact size), and the mount keeps
those pages across opens (``keep_cache``), so both are served by the kernel; the first
pays for the kernel's first reuse of the pages (a local file's first read again is as
much slower, which its reference leaves out). The reference reads the same bytes from
a local file in the page cache; a second one from a copy in tmpfs, whose page cache is
made of 4 KiB pages as a FUSE file's is on kernels without large folios for FUSE
(ext4 keeps big files in folios of up to 2 MiB, which a sequential read copies from
with less work per byte). The requests that reached the daemon during the warm reads
show whether the kernel served them.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

from ..context import Context
from ..measure import READ_SIZE, ReadTiming, RssSampler, cpu_seconds, median, read_file
from ..results import Aim, Row, seconds, throughput
from ..sizes import MiB
from .daemon_requests import requests, shares

#: a tmpfs: the local reference in 4 KiB pages
_TMPFS = Path("/dev/shm")

__all__ = ["run"]


def _checked(timing: ReadTiming, size: int) -> ReadTiming:
    if timing.size != size:
        raise RuntimeError(f"read {timing.size} bytes of the big document, not {size}")
    return timing


def run(ctx: Context) -> list[Row]:
    data, repeats = ctx.data, ctx.sizes.repeats
    size = data.big_size
    curl = []
    curl_first = []
    for _ in range(repeats):
        ctx.drop_caches()
        curl.append(ctx.vault.curl_download(data.big_id, size))
        ctx.drop_caches()
        curl_first.append(ctx.vault.curl_first_bytes(data.big_id, READ_SIZE))
    cold: list[ReadTiming] = []
    warm: list[ReadTiming] = []
    cached: list[ReadTiming] = []
    cold_calls: list[int] = []
    warm_calls = cached_calls = 0
    warm_requests: Counter[str] = Counter()
    peak_kib = high_water_kib = 0
    cold_cpu: list[float] = []
    for run_number in range(repeats):
        with ctx.mount() as mount:
            path = mount.root / data.big_path
            ctx.drop_caches()
            before = mount.api_calls()
            cpu_before = cpu_seconds(mount.pid)
            with RssSampler(mount.pid) as rss:
                cold.append(_checked(read_file(path), size))
            cold_cpu.append(cpu_seconds(mount.pid) - cpu_before)
            cold_calls.append(mount.api_calls() - before)
            peak_kib = max(peak_kib, rss.peak_kib)
            high_water_kib = max(high_water_kib, rss.high_water_kib())
            # A cold open reads past the kernel's page cache (the size was not known
            # yet): the first read again is served by the daemon from its content cache.
            before = mount.api_calls()
            warm.append(_checked(read_file(path), size))
            warm_calls += mount.api_calls() - before
            if run_number == repeats - 1:
                before = mount.api_calls()
                requests_before = requests(mount)
                cached = [_checked(read_file(path), size) for _ in range(repeats)]
                warm_requests = requests(mount) - requests_before
                cached_calls = mount.api_calls() - before
    read_file(data.big_local)  # into the page cache: the warm reference
    local = [_checked(read_file(data.big_local), size) for _ in range(repeats)]
    small_pages = _small_pages_reference(data.big_local, size, repeats)

    cold_s = median([t.total for t in cold])
    curl_s = median([t.total for t in curl])
    warm_s = median([t.total for t in warm])
    cached_s = median([t.total for t in cached])
    local_s = median([t.total for t in local])
    first_s = median([t.first_byte for t in cold])
    curl_first_s = median(curl_first)
    mib = size // MiB
    return [
        Row(
            f"sequential read of {mib} MiB, cold",
            throughput(size, cold_s),
            f"curl: {throughput(size, curl_s)}",
            curl_s / cold_s,
            Aim(True, 0.9),
            f"{median(cold_calls):.0f}",
        ),
        Row(
            f"sequential read of {mib} MiB, warm (content cache)",
            throughput(size, warm_s),
            f"local file: {throughput(size, local_s)}",
            local_s / warm_s,
            Aim(True, 0.8),
            f"{warm_calls / repeats:.0f}",
        ),
        Row(
            f"sequential read of {mib} MiB, warm (content and page cache)",
            throughput(size, cached_s),
            f"local file: {throughput(size, local_s)}",
            local_s / cached_s,
            Aim(True, 0.8),
            f"{cached_calls / repeats:.0f}",
        ),
        Row(
            f"requests reaching the daemon per warm read of {mib} MiB (content and page cache)",
            shares(warm_requests, repeats),
            "—",
            None,
            None,
        ),
        *(
            [
                Row(
                    f"sequential read of {mib} MiB, warm (content and page cache), against"
                    " 4 KiB pages",
                    throughput(size, cached_s),
                    f"local file in tmpfs: {throughput(size, median(small_pages))}",
                    median(small_pages) / cached_s,
                    None,
                )
            ]
            if small_pages
            else []
        ),
        Row(
            f"first byte of {mib} MiB, cold",
            seconds(first_s),
            f"curl: {seconds(curl_first_s)}",
            first_s / curl_first_s,
            Aim(False, 2),
        ),
        Row(
            f"peak daemon memory (VmRSS) streaming {mib} MiB",
            f"{peak_kib / 1024:.0f} MiB (VmHWM {high_water_kib / 1024:.0f} MiB)",
            "—",
            peak_kib / 1024,
            Aim(False, 150),
        ),
        Row(
            "daemon CPU per GiB read cold",
            seconds(median(cold_cpu) * (1 << 30) / size),
            "—",
            None,
            None,
        ),
    ]


def _small_pages_reference(local: Path, size: int, repeats: int) -> list[float]:
    """Warm reads of a copy of ``local`` in tmpfs (4 KiB pages); none without a tmpfs
    with room for it."""
    if not _TMPFS.is_dir() or shutil.disk_usage(_TMPFS).free < 2 * size:
        return []
    copy = _TMPFS / f"vaultfs-bench-{local.name}"
    try:
        shutil.copyfile(local, copy)
        read_file(copy)
        return [_checked(read_file(copy), size).total for _ in range(repeats)]
    finally:
        copy.unlink(missing_ok=True)
