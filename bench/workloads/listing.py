"""``find -ls`` and ``ls -lR`` over the folder of many small documents.

Cold: a new mount with a fresh cache; the API calls counted are all the mount made
from its start but the login (the index build, and whatever the listing needed), which
is what listing a freshly mounted vault costs, given per page of 200 documents of the
vault (the API has no filter by type, so any folder costs the index of the whole vault). The
shallow listing (``-maxdepth 2``: the documents and their source files) shows what the
index alone costs. Warm: the same listings again on that mount. The reference is the
same tree (names, kinds and sizes copied from the mount) on local disk, listed warm.
"""

from __future__ import annotations

import math
import os
import subprocess
from pathlib import Path

from vaultfs.wire import PAGE_LIMIT

from ..context import Context
from ..measure import RssSampler, cpu_seconds, median, timed_run
from ..results import Aim, Row, seconds
from .daemon_requests import requests, shares

__all__ = ["run"]


def _find(directory: Path, *depth: str) -> list[str]:
    return ["find", str(directory), *depth, "-ls"]


def _ls(directory: Path) -> list[str]:
    return ["ls", "-lR", str(directory)]


def mirror(source: Path, target: Path) -> int:
    """Recreate the directories and files (as sparse files of the same sizes) of
    ``source`` under ``target``: the same tree as far as a listing can tell. Returns
    the number of entries."""
    listing = subprocess.run(
        ["find", str(source), "-mindepth", "1", "-printf", r"%y %s %P\0"],
        capture_output=True,
        check=True,
    ).stdout
    target.mkdir(parents=True)
    entries = list(filter(None, listing.split(b"\0")))
    for entry in entries:
        kind, size, name = entry.split(b" ", 2)
        path = target / os.fsdecode(name)
        if kind == b"d":
            path.mkdir()
        else:
            with path.open("wb") as f:
                f.truncate(int(size))
    return len(entries)


#: documents and their latest source files, not the folders inside each document
_SHALLOW = ("-maxdepth", "2")


def run(ctx: Context) -> list[Row]:
    repeats = ctx.sizes.repeats
    with ctx.mount() as mount:
        ctx.drop_caches()
        shallow_s = timed_run(_find(mount.root / ctx.data.listing_dir, *_SHALLOW))
        shallow_calls = mount.api_calls()
        indexed = mount.indexed_documents()
    with ctx.mount() as mount:
        directory = mount.root / ctx.data.listing_dir
        documents = len(os.listdir(directory))
        ctx.drop_caches()
        with RssSampler(mount.pid) as rss:
            cold_s = timed_run(_find(directory))
            cold_calls = mount.api_calls()
            index_s = mount.seconds_to_index
            before = mount.api_calls()
            cpu_before = cpu_seconds(mount.pid)
            counted = requests(mount)
            find_warm = [timed_run(_find(directory)) for _ in range(repeats)]
            find_cpu = (cpu_seconds(mount.pid) - cpu_before) / repeats
            find_requests = requests(mount) - counted
            counted = requests(mount)
            ls_warm = [timed_run(_ls(directory)) for _ in range(repeats)]
            ls_requests = requests(mount) - counted
        warm_calls = mount.api_calls() - before
        local = ctx.scratch("listing-local")
        entries = mirror(directory, local)
    timed_run(_find(local))  # into the kernel's caches: the warm reference
    find_local = [timed_run(_find(local)) for _ in range(repeats)]
    ls_local = [timed_run(_ls(local)) for _ in range(repeats)]
    shallow_local = [timed_run(_find(local, *_SHALLOW)) for _ in range(repeats)]
    local_s = median(find_local)
    # The API lists documents of every type together: a folder costs the whole index,
    # at best one call per (started) page of 200.
    pages = math.ceil(indexed / PAGE_LIMIT)
    return [
        Row(
            f"find -maxdepth 2 -ls over {documents} documents (no versions/ etc.), cold",
            f"{seconds(shallow_s)}",
            f"local: {seconds(median(shallow_local))}",
            shallow_calls / pages,
            Aim(False, 1),
            f"{shallow_calls} ({shallow_calls / pages:.2f} per page of {PAGE_LIMIT})",
        ),
        Row(
            f"find -ls over {documents} documents, cold",
            f"{seconds(cold_s)} (+ {seconds(index_s)} mount and index)",
            f"local find -ls, warm: {seconds(local_s)}",
            cold_calls / pages,
            Aim(False, 1),
            f"{cold_calls} ({cold_calls / pages:.1f} per page of {PAGE_LIMIT})",
        ),
        Row(
            f"find -ls over {documents} documents, warm",
            seconds(median(find_warm)),
            f"local find -ls: {seconds(local_s)}",
            median(find_warm) / local_s,
            Aim(False, 3),
            f"{warm_calls} (find and ls runs)",
        ),
        Row(
            f"ls -lR over {documents} documents, warm",
            seconds(median(ls_warm)),
            f"local ls -lR: {seconds(median(ls_local))}",
            median(ls_warm) / median(ls_local),
            Aim(False, 3),
            "",
        ),
        Row(
            f"requests reaching the daemon per warm find -ls over {documents} documents",
            shares(find_requests, repeats),
            "—",
            None,
            None,
        ),
        Row(
            f"requests reaching the daemon per warm ls -lR over {documents} documents",
            shares(ls_requests, repeats),
            "—",
            None,
            None,
        ),
        Row(
            f"peak daemon memory (VmRSS) listing {documents} documents (find -ls cold and"
            " warm, ls -lR warm)",
            f"{rss.peak_kib / 1024:.0f} MiB",
            "—",
            rss.peak_kib / 1024,
            Aim(False, 150),
        ),
        Row(
            f"daemon CPU per 10,000 entries of a warm find -ls ({entries} entries)",
            seconds(find_cpu * 10_000 / entries),
            "—",
            None,
            None,
        ),
    ]
