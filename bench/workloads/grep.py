"""``grep -rl`` and ``rsync -a`` over the folder of medium text documents.

Cold grep: a new mount with a fresh cache after dropping the page cache; the reference
downloads the same documents' files with 8 parallel transfers (curl), after dropping
the page cache too. Warm grep and rsync: the same mount again; their references run
over a copy of the mount's folder (taken with rsync) on local disk. What the warm grep
costs the daemon: the requests that reached it, by kind, and its CPU time.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from ..context import Context
from ..dataset import NEEDLE
from ..measure import cpu_seconds, median, timed_run
from ..results import Aim, Row, seconds
from .daemon_requests import requests, shares

__all__ = ["run"]

_PARALLEL = 8


def _grep(directory: Path, at_least: int) -> float:
    """Seconds ``grep -rl`` took; fails unless it found at least ``at_least`` files."""
    started = time.perf_counter()
    result = subprocess.run(
        ["grep", "-rl", "--", NEEDLE.decode(), str(directory)], capture_output=True, check=True
    )
    elapsed = time.perf_counter() - started
    found = len(result.stdout.splitlines())
    if found < at_least:
        raise RuntimeError(f"grep found {found} files in {directory}, expected {at_least}")
    return elapsed


def _rsync(source: Path, target: Path) -> float:
    return timed_run(["rsync", "-a", f"{source}/", str(target)])


def _rsync_runs(ctx: Context, source: Path, name: str, repeats: int) -> list[float]:
    """``repeats`` rsyncs of ``source`` into a new directory each time."""
    times = []
    for number in range(repeats):
        target = ctx.scratch(f"{name}-{number}")
        times.append(_rsync(source, target))
        shutil.rmtree(target)
    return times


def run(ctx: Context) -> list[Row]:
    data, repeats = ctx.data, ctx.sizes.repeats
    documents, matches = len(data.grep_ids), data.grep_matches
    reference_cold = []
    for _ in range(repeats):
        ctx.drop_caches()
        reference_cold.append(ctx.vault.curl_parallel_download(data.grep_ids, _PARALLEL))
    cold, cold_calls = [], []
    for run_number in range(repeats):
        with ctx.mount() as mount:
            directory = mount.root / data.grep_dir
            ctx.drop_caches()
            before = mount.api_calls()
            cold.append(_grep(directory, matches))
            cold_calls.append(mount.api_calls() - before)
            if run_number < repeats - 1:
                continue
            before = mount.api_calls()
            requests_before, cpu_before = requests(mount), cpu_seconds(mount.pid)
            warm = [_grep(directory, matches) for _ in range(repeats)]
            warm_cpu = cpu_seconds(mount.pid) - cpu_before
            warm_requests = requests(mount) - requests_before
            rsync_warm = _rsync_runs(ctx, directory, "rsync-mount", repeats)
            warm_calls = mount.api_calls() - before
            local = ctx.scratch("grep-local")
            _rsync(directory, local)
    local_grep = [_grep(local, matches) for _ in range(repeats + 1)][1:]
    local_rsync = _rsync_runs(ctx, local, "rsync-local", repeats + 1)[1:]

    return [
        Row(
            f"grep -rl over {documents} documents of {ctx.sizes.grep_doc_bytes >> 10} KiB, cold",
            seconds(median(cold)),
            f"curl, {_PARALLEL} parallel: {seconds(median(reference_cold))}",
            median(cold) / median(reference_cold),
            Aim(False, 1.3),
            f"{median(cold_calls):.0f}",
        ),
        Row(
            f"grep -rl over {documents} documents, warm",
            seconds(median(warm)),
            f"local grep -rl: {seconds(median(local_grep))}",
            median(warm) / median(local_grep),
            Aim(False, 2),
            f"{warm_calls} (grep and rsync runs)",
        ),
        Row(
            f"requests reaching the daemon per warm grep -rl over {documents} documents",
            shares(warm_requests, repeats),
            "—",
            None,
            None,
        ),
        Row(
            f"daemon CPU per warm grep -rl over {documents} documents",
            seconds(warm_cpu / repeats),
            "—",
            None,
            None,
        ),
        Row(
            f"rsync -a of {documents} documents out of the mount, warm",
            seconds(median(rsync_warm)),
            f"local rsync -a: {seconds(median(local_rsync))}",
            median(rsync_warm) / median(local_rsync),
            Aim(False, 2),
            "",
        ),
    ]
