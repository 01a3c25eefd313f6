"""Warm walks of a whole mount, the views (``My Documents``, ``Recent Documents``,
``Favorites``) included: ``find -ls``, ``ls -lR`` and ``grep -rl``, at each of
``Sizes.walk_vaults`` documents (1,000 and 10,000).

Apart from the run's data set: the workload starts a vault of its own and fills it with
the bulk CSV create (no files: a walk's cost is in its names, attributes and links; the
demo's documents hold the content grep reads), topped up from one size to the next.
Every document is the admin's, so ``My Documents`` links to each. For each size: a new
mount, one walk of each kind to warm it (its calls are the cold walk's), then each walk
``repeats`` times; the reference is the same tree copied with ``cp -a`` to local disk
(the views' links copied as links), walked warm the same way. Rows: each walk's time
against the local one (aim 1.5x), and the requests that reached the daemon and the API
calls of the warm walks.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from vaultfs.testing.vault_process import VaultProcess

from ..context import Context
from ..measure import median
from ..mount import Mount
from ..results import Aim, Row, seconds
from .daemon_requests import requests, shares
from .scale import SERVER_ARGS, build, session

__all__ = ["run"]

#: what grep looks for: in no file (every file is read to its end)
_NEEDLE = "zq-walk-needle-nowhere"


def _walks(root: Path) -> dict[str, list[str]]:
    return {
        "find -ls": ["find", str(root), "-ls"],
        "ls -lR": ["ls", "-lR", str(root)],
        "grep -rl": ["grep", "-rl", "--", _NEEDLE, str(root)],
    }


def _timed(argv: Sequence[str]) -> float:
    """Seconds ``argv`` took (grep's "nothing found" is a success here)."""
    started = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stderr[-300:]!r}")
    return time.perf_counter() - started


def run(ctx: Context) -> list[Row]:
    repeats = ctx.sizes.repeats
    server = VaultProcess(ctx.workdir / "walk-server", extra_args=SERVER_ARGS)
    server.log_path = ctx.workdir / "walk-server.log"
    rows: list[Row] = []
    made = 0
    try:
        server.start()
        for count in ctx.sizes.walk_vaults:
            with session(server) as client:
                build(client, count, start=made)
            made = count
            rows += _walk(ctx, server.url, count, repeats)
    finally:
        server.stop()
    return rows


def _walk(ctx: Context, url: str, count: int, repeats: int) -> list[Row]:
    local = ctx.scratch(f"walk-local-{count}")
    mount = Mount(url, ctx.workdir).start()
    try:
        walks = _walks(mount.root)
        before = mount.api_calls()
        for argv in walks.values():
            _timed(argv)  # cold: the index and every listing made once
            _timed(argv)  # the kernel fills what it keeps of links once read
        cold_calls = mount.api_calls() - before
        figures: dict[str, tuple[float, str, int]] = {}
        for name, argv in walks.items():
            counted, calls = requests(mount), mount.api_calls()
            took = median([_timed(argv) for _ in range(repeats)])
            figures[name] = (took, shares(requests(mount) - counted, repeats),
                             mount.api_calls() - calls)  # fmt: skip
        subprocess.run(["cp", "-a", f"{mount.root}/.", str(local)], check=True)
    finally:
        mount.stop()
    try:
        references = {}
        for name, argv in _walks(local).items():
            _timed(argv)
            references[name] = median([_timed(argv) for _ in range(repeats)])
    finally:
        shutil.rmtree(local, ignore_errors=True)
    rows = []
    for name, (took, asked, calls) in figures.items():
        rows.append(
            Row(
                f"walk: warm {name} of the whole mount, views included ({count} documents)",
                seconds(took),
                f"local {name}: {seconds(references[name])}",
                took / references[name],
                Aim(False, 1.5),
                f"{calls} (warm); {cold_calls} the first two walks",
            )
        )
        rows.append(
            Row(
                f"walk: requests reaching the daemon per warm {name} ({count} documents)",
                asked,
                "—",
                None,
                None,
            )
        )
    return rows
