"""``vaultfs search --content`` against ``grep -rl`` over the folder of medium text
documents (the 1,000-document set), cold, in time and API calls.

Both run on a new mount with a fresh cache after dropping the page cache. grep reads
every document's file (a download each); the search asks the vault's full-text index
(one list call per 200 matching versions) and reads the links of the mount's search
folder. The words searched are the needle's last two parts (``needle-7f3a``): the data
set glues the needle to the base64 text before it, which ``grep`` matches as bytes and
a full-text index reads as one longer word; both must find the same documents.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from ..context import Context
from ..dataset import NEEDLE
from ..measure import median
from ..results import Aim, Row, seconds

__all__ = ["run"]

#: the needle as the vault's full-text search can find it (see the docstring)
_WORDS = NEEDLE.decode().split("-", 1)[1]


def _found(argv: list[str], expected: int, what: str, *, exact: bool = True) -> float:
    """Seconds ``argv`` took; fails unless it printed ``expected`` paths (at least, with
    ``exact`` false: grep also finds the file of each document's ``versions/``)."""
    started = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if result.returncode not in (0, 1):
        raise RuntimeError(f"{what} failed: {result.stderr.decode()[:300]}")
    found = len(result.stdout.splitlines())
    if found < expected or (exact and found != expected):
        raise RuntimeError(f"{what} found {found} documents, expected {expected}")
    return elapsed


def _search(directory: Path, expected: int) -> float:
    argv = [sys.executable, "-m", "vaultfs", "search", "--content", str(directory), _WORDS]
    return _found(argv, expected, "vaultfs search")


def _list(folder: Path, expected: int) -> float:
    """The mount's part of a search alone: ``ls`` of its search folder."""
    return _found(["ls", "-1", str(folder)], expected, "ls of the search folder")


def _grep(directory: Path, expected: int) -> float:
    argv = ["grep", "-rl", "--", NEEDLE.decode(), str(directory)]
    return _found(argv, expected, "grep -rl", exact=False)


def run(ctx: Context) -> list[Row]:
    data, repeats = ctx.data, ctx.sizes.repeats
    documents, matches = len(data.grep_ids), data.grep_matches
    searched, search_calls, listed, grepped, grep_calls = [], [], [], [], []
    for _ in range(repeats):
        with ctx.mount() as mount:
            ctx.drop_caches()
            before = mount.api_calls()
            searched.append(_search(mount.root / data.grep_dir, matches))
            search_calls.append(mount.api_calls() - before)
        with ctx.mount() as mount:
            ctx.drop_caches()
            listed.append(_list(mount.root / ".search" / "content" / _WORDS, matches))
        with ctx.mount() as mount:
            ctx.drop_caches()
            before = mount.api_calls()
            grepped.append(_grep(mount.root / data.grep_dir, matches))
            grep_calls.append(mount.api_calls() - before)
    grep = f"grep -rl, cold: {seconds(median(grepped))} ({median(grep_calls):.0f} calls)"
    return [
        Row(
            f"vaultfs search --content over {documents} documents of "
            f"{ctx.sizes.grep_doc_bytes >> 10} KiB, cold",
            seconds(median(searched)),
            grep,
            median(searched) / median(grepped),
            Aim(False, 0.5),
            f"{median(search_calls):.0f}",
        ),
        Row(
            "ls of .search/content/WORDS (the mount's part of it), cold",
            seconds(median(listed)),
            grep,
            median(listed) / median(grepped),
            Aim(False, 0.1),
            f"{median(search_calls):.0f}",
        ),
    ]
