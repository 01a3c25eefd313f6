"""A big vault: ``Sizes.scale_docs`` documents (100,000; 1,000,000 with
``--scale-documents``) in one classification, made with the bulk CSV create (no files).

Apart from the run's data set: the workload starts a vault of its own (limits high
enough that nothing waits for the burst window) and mounts it twice on one cache
directory. Rows: for each mount, the time until the big folder lists whole, the time
until the mount says its index is ready, and the API calls it made (logins left out);
the daemon's memory after ``ls -l`` of the big folder; warm ``ls`` and ``ls -l`` of it
against a local directory of the same names; ``find MOUNT -name PATTERN`` from the top
of the second mount at the default walks' share (``tree.walks``): its time against
the same ``find`` over a local tree of the same shape (a folder per document with its
four sub-folders), the calls it cost against the share, what the share refused, and
the daemon's memory after it; GNOME Files opening the big folder on a third mount (the
index kept, nothing listed) against opening that local tree's folder: until the window
shows it, and until GNOME Files and the mount are done counting each document folder's
items (``files_window``), and the daemon's memory after; the server's list page at the
last offset (sorted as mounts sort), the first time and again. Each row names its floor:
a first mount cannot cost less than one call per started page of 200 documents (plus
a few metadata calls), a second mount on the same cache needs next to none.
"""

from __future__ import annotations

import csv
import io
import math
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from vaultfs.bridge.tree.walks import WALK_BURST, WALK_CALLS
from vaultfs.testing.mount_process import MountProcess
from vaultfs.testing.postgres import PostgresCluster
from vaultfs.testing.vault_process import ADMIN, DEMO_PASSWORD, VaultProcess, wait_until
from vaultfs.wire import API_VERSION, PAGE_LIMIT

from ..context import Context
from ..measure import median, rss_kib, timed_run
from ..results import Aim, Row, seconds
from . import files_window

__all__ = ["FOLDER", "SERVER_ARGS", "build", "run", "session"]

SERVER_ARGS = [
    "--session-timeout", "1440", "--burst-limit", "100000000", "--daily-limit", "1000000000",
]  # fmt: skip
_WHERE = ("promotional_piece__c", "advertisement__c", "general_lifecycle__c")
FOLDER = Path("Promotional Piece/Advertisement")
_BATCH = 500
_SORT = "version_modified_date__v desc"
#: documents a new local vault holds before the workload makes its own (the demo's)
_DEMO_DOCUMENTS = 100
#: metadata calls a mount makes besides the list pages (types, fields, deletions...)
_METADATA_CALLS = 10
_LOGIN = "POST /auth"
#: the vault's burst window, over which a walk's burst comes back (``tree.walks``)
_BURST_WINDOW = 300.0
#: how long a mount may take to list the big folder or get ready
_MOUNT_TIMEOUT = 3600.0


def session(server: VaultProcess) -> httpx.Client:
    api = f"{server.url}/api/{API_VERSION}"
    body = httpx.post(f"{api}/auth", data={"username": ADMIN, "password": DEMO_PASSWORD}).json()
    return httpx.Client(base_url=api, headers={"Authorization": body["sessionId"]}, timeout=600)


def build(client: httpx.Client, count: int, start: int = 0) -> float:
    """Create documents ``start`` to ``count`` in batches of 500; the seconds it took."""
    started = time.perf_counter()
    for first in range(start, count, _BATCH):
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["name__v", "type__v", "subtype__v", "lifecycle__v"])
        writer.writerows(
            [f"S{n:07d}", *_WHERE[:2], _WHERE[2]] for n in range(first, min(count, first + _BATCH))
        )
        body = client.post(
            "/objects/documents/batch",
            content=out.getvalue().encode(),
            headers={"Content-Type": "text/csv"},
        ).json()
        if body.get("responseStatus") != "SUCCESS" or any(
            r.get("responseStatus") != "SUCCESS" for r in body["data"]
        ):
            raise RuntimeError(f"bulk create failed: {str(body)[:300]}")
    return time.perf_counter() - started


def _total(client: httpx.Client) -> int:
    body = client.get("/objects/documents", params={"limit": 1}).json()
    return int(body["responseDetails"]["total"])


def last_page_seconds(client: httpx.Client, repeats: int) -> tuple[float, float, int]:
    """(the first request for the last page, the median of it again, the total)."""
    total = _total(client)
    params: dict[str, Any] = {
        "limit": PAGE_LIMIT,
        "start": max(0, total - PAGE_LIMIT),
        "sort": _SORT,
    }
    times = []
    for _ in range(repeats + 1):
        started = time.perf_counter()
        body = client.get("/objects/documents", params=params).json()
        times.append(time.perf_counter() - started)
        if body.get("responseStatus") != "SUCCESS" or not body["documents"]:
            raise RuntimeError(f"the last page failed: {str(body)[:300]}")
    return times[0], median(times[1:]), total


class _Started:
    """One mount's start: when the big folder listed whole, when the index was ready."""

    def __init__(self, mount: MountProcess, folder: Path, expected: int) -> None:
        self.mount = mount
        self.folder = folder
        self.expected = expected
        self.listed = 0.0
        self.ready = 0.0
        self.errors = 0
        #: API calls until ready and listed, logins left out
        self.calls = 0

    def _list(self, started: float) -> None:
        deadline = started + _MOUNT_TIMEOUT
        while time.perf_counter() < deadline:
            try:
                if len(os.listdir(self.folder)) >= self.expected:
                    self.listed = time.perf_counter() - started
                    return
            except OSError:
                self.errors += 1
            time.sleep(0.2)

    def run(self) -> _Started:
        started = time.perf_counter()
        self.mount.start(timeout=300, wait_index=False)  # the listing is timed from the start
        lister = threading.Thread(target=self._list, args=(started,), daemon=True)
        lister.start()
        wait_until(
            lambda: self.mount.status()["index"]["ready"],
            timeout=_MOUNT_TIMEOUT,
            interval=0.2,
            what="the index",
        )
        self.ready = time.perf_counter() - started
        lister.join(_MOUNT_TIMEOUT)
        if not self.listed:
            raise RuntimeError(f"{self.folder} never listed {self.expected} entries")
        status = self.mount.status()
        self.calls = int(status["api_calls"]) - int(status["api_calls_by_endpoint"].get(_LOGIN, 0))
        return self


def _on_postgresql(ctx: Context, count: int, repeats: int) -> list[Row]:
    """The server's side of the scale workload on PostgreSQL: the bulk create of
    ``count`` documents and the last list page, on a throwaway cluster."""
    with PostgresCluster() as cluster:
        server = VaultProcess(
            ctx.workdir / "scale-server-postgresql",
            extra_args=[*SERVER_ARGS, "--database", cluster.create_database()],
            env=cluster.env,
        )
        server.log_path = ctx.workdir / "scale-server-postgresql.log"
        with server, session(server) as client:
            built = build(client, count)
            page_first, page_again, total = last_page_seconds(client, repeats)
    return [
        Row(
            f"scale: bulk CSV create of {count} documents, PostgreSQL",
            f"{seconds(built)} ({seconds(built / count * 100_000)} per 100,000)",
            "—",
            None,
            None,
            f"{math.ceil(count / _BATCH)}",
        ),
        *(
            Row(
                f"scale: server list page at the last offset ({total} documents, sorted),"
                f" {when}, PostgreSQL",
                seconds(took),
                "aim: 50 ms",
                took * 1000,
                Aim(False, 50),
            )
            for when, took in (("first", page_first), ("again", page_again))
        ),
    ]


def _local_copy(folder: Path, target: Path) -> None:
    """The entries of ``folder`` (names and kinds) as a local directory."""
    target.mkdir(parents=True)
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir():
                (target / entry.name).mkdir()
            else:
                (target / entry.name).touch()


#: the sub-folders of a document's folder, as the mount shows them
_DOCUMENT_DIRS = ("versions", "renditions", "attachments", "relationships")


def _local_tree(folder: Path, target: Path) -> None:
    """The shape of a mount's big folder as a local tree: a folder per document, with
    its four sub-folders (the scale documents have no file)."""
    target.mkdir(parents=True)
    for name in os.listdir(folder):
        for sub in _DOCUMENT_DIRS:
            (target / name / sub).mkdir(parents=True)


class _Walk:
    """``find ROOT -name PATTERN`` from the top of a mount: seconds, calls (logins left
    out), what the walks' share spent and refused, the daemon's memory after."""

    def __init__(self, mount: MountProcess, pattern: str) -> None:
        before = mount.status()
        started = time.perf_counter()
        found = subprocess.run(
            ["find", str(mount.mountpoint), "-name", pattern],
            capture_output=True,
            text=True,
            check=False,
        )
        self.seconds = time.perf_counter() - started
        after = mount.status()
        self.found = found.stdout.splitlines()
        logins = int(after["api_calls_by_endpoint"].get(_LOGIN, 0)) - int(
            before["api_calls_by_endpoint"].get(_LOGIN, 0)
        )
        self.calls = int(after["api_calls"]) - int(before["api_calls"]) - logins
        self.spent = int(after["walks"]["spent"]) - int(before["walks"]["spent"])
        self.refused = int(after["walks"]["refused"]) - int(before["walks"]["refused"])
        self.rss_mib = rss_kib(mount.pid) / 1024
        #: what the walk may spend: its burst, what comes back of it meanwhile, within
        #: the day's share
        self.share = min(WALK_CALLS, WALK_BURST * (1 + self.seconds / _BURST_WINDOW))

    def found_name(self, name: str) -> bool:
        return any(line.endswith(f"/{name}") for line in self.found)


def _mount(ctx: Context, url: str, cache: Path) -> MountProcess:
    return MountProcess(
        url,
        ctx.workdir,
        options="poll_interval=3600",
        cache_dir=cache,
        log_level="INFO",
        mountpoint=ctx.workdir / "scale-mnt",
    )


def run(ctx: Context) -> list[Row]:
    count = ctx.sizes.scale_docs
    repeats = ctx.sizes.repeats
    data_dir = ctx.scale_vault or ctx.workdir / "scale-server"
    server = VaultProcess(data_dir, extra_args=SERVER_ARGS)
    server.log_path = ctx.workdir / "scale-server.log"
    cache = ctx.workdir / "scale-cache"
    cache.mkdir(mode=0o700)
    try:
        server.start()
        with session(server) as client:
            # A kept vault (--scale-vault) is topped up from what earlier runs made.
            marker = data_dir / "scale-documents"
            have = int(marker.read_text()) if marker.exists() else 0
            if not have and _total(client) > _DEMO_DOCUMENTS:
                # Topping up a vault this workload did not count would double it.
                raise RuntimeError(f"{data_dir} holds a vault this workload did not make")
            made = max(0, count - have)
            built = build(client, count, start=have) if made else 0.0
            marker.write_text(str(max(count, have)))
            page_first, page_again, total = last_page_seconds(client, repeats)
        pages = math.ceil(total / PAGE_LIMIT)
        starts = []
        for _ in range(2):
            mount = _mount(ctx, server.url, cache)
            try:
                ctx.drop_caches()
                starts.append(_Started(mount, mount.mountpoint / FOLDER, count).run())
                if len(starts) == 2:
                    folder = mount.mountpoint / FOLDER
                    # After the names-only listing the kernel knows no entry: the first
                    # are looked up (one request each), then the mount drops the listing
                    # the kernel kept and gives the rest with attributes (``plus_names``).
                    first_ls_l = timed_run(["ls", "-l", str(folder)])
                    rss_mib = rss_kib(mount.pid) / 1024
                    ls = [timed_run(["ls", str(folder)]) for _ in range(repeats)]
                    ls_l = [timed_run(["ls", "-l", str(folder)]) for _ in range(repeats)]
                    local = ctx.scratch("scale-local")
                    _local_copy(folder, local)
                    # A search by name from the top, as a user's find or a file
                    # manager's search walks it, at the default walks' share.
                    pattern = f"S{count // 2:07d}*"
                    walk = _Walk(mount, pattern)
                    local_tree = ctx.scratch("scale-local-tree")
                    _local_tree(folder, local_tree)
            finally:
                mount.stop()
        windows = _files_windows(ctx, server.url, cache, local_tree, count)
    finally:
        server.stop()
        if ctx.scale_vault is None:
            shutil.rmtree(data_dir, ignore_errors=True)
    timed_run(["ls", "-l", str(local)])  # into the kernel's caches: the warm reference
    ls_local = [timed_run(["ls", str(local)]) for _ in range(repeats)]
    ls_l_local = [timed_run(["ls", "-l", str(local)]) for _ in range(repeats)]
    shutil.rmtree(local, ignore_errors=True)
    ctx.drop_caches()
    walk_local = timed_run(["find", str(local_tree), "-name", pattern])
    shutil.rmtree(local_tree, ignore_errors=True)
    first, second = starts
    floor = f"floor: {pages} pages of {PAGE_LIMIT} + ~{_METADATA_CALLS} metadata calls"
    rows = [
        Row(
            f"scale: bulk CSV create of {made} documents (one classification, no files)"
            + (f"; {count - made} kept from an earlier run" if made < count else ""),
            f"{seconds(built)} ({seconds(built / made * 100_000)} per 100,000)" if made else "—",
            "—",
            None,
            None,
            f"{math.ceil(made / _BATCH)}",
        )
    ]
    for name, start in (("first", first), ("second", second)):
        calls = start.calls
        aim_calls = (pages + _METADATA_CALLS) if name == "first" else 5
        rows += [
            Row(
                f"scale: {name} mount, until {FOLDER} ({count} documents) lists whole",
                seconds(start.listed),
                "aim: 2 s" if name == "second" else "floor: the index's build",
                start.listed if name == "second" else None,
                Aim(False, 2) if name == "second" else None,
                f"{start.errors} failed listings meanwhile",
            ),
            Row(
                f"scale: {name} mount, until its index is ready ({total} documents)",
                seconds(start.ready),
                "—",
                None,
                None,
            ),
            Row(
                f"scale: {name} mount, API calls until ready and listed",
                f"{calls}",
                floor if name == "first" else "floor: 0 (aim ≤ 5)",
                calls / aim_calls,
                Aim(False, 1),
                f"{calls}",
            ),
        ]
    rows += [
        Row(
            f"scale: daemon memory (VmRSS) after ls -l of {count} documents",
            f"{rss_mib:.0f} MiB",
            "aim: 200 MiB",
            rss_mib,
            Aim(False, 200),
        ),
        Row(
            f"scale: second mount, first ls -l of {count} documents, right after its ls",
            seconds(first_ls_l),
            f"local ls -l: {seconds(median(ls_l_local))}",
            first_ls_l / median(ls_l_local),
            Aim(False, 3),
        ),
        Row(
            f"scale: ls of {count} documents, warm",
            seconds(median(ls)),
            f"local ls: {seconds(median(ls_local))}",
            median(ls) / median(ls_local),
            Aim(False, 2),
        ),
        Row(
            f"scale: ls -l of {count} documents, warm",
            seconds(median(ls_l)),
            f"local ls -l: {seconds(median(ls_l_local))}",
            median(ls_l) / median(ls_l_local),
            Aim(False, 2),
        ),
        Row(
            f"scale: find -name over the whole second mount ({count} documents; "
            f"{'found' if walk.found_name(pattern[:-1]) else 'NOT found'})",
            seconds(walk.seconds),
            f"local find -name of the same shape, cold: {seconds(walk_local)}",
            walk.seconds / walk_local,
            None,
            f"{walk.calls}",
        ),
        Row(
            "scale: that find's calls against the walks' share (a program's burst, and what "
            "comes back of it while the walk lasts)",
            f"{walk.spent} spent, {walk.refused} refused (EDQUOT)",
            f"share: {walk.share:.0f} ({WALK_BURST} + {WALK_BURST} per 5 minutes of the walk)",
            walk.calls / walk.share,
            Aim(False, 1.1),
            f"{walk.calls}",
        ),
        Row(
            "scale: daemon memory (VmRSS) after that find",
            f"{walk.rss_mib:.0f} MiB",
            "aim: 200 MiB",
            walk.rss_mib,
            Aim(False, 200),
        ),
        Row(
            f"scale: server list page at the last offset ({total} documents, sorted), first",
            seconds(page_first),
            "aim: 50 ms",
            page_first * 1000,
            Aim(False, 50),
        ),
        Row(
            f"scale: server list page at the last offset ({total} documents, sorted), again",
            seconds(page_again),
            "aim: 50 ms",
            page_again * 1000,
            Aim(False, 50),
        ),
    ]
    rows += windows
    if ctx.scale_postgresql:
        rows += _on_postgresql(ctx, count, repeats)
    return rows


def _files_windows(ctx: Context, url: str, cache: Path, local_tree: Path, count: int) -> list[Row]:
    """GNOME Files opening the big folder on a third mount (the kernel knows nothing of
    it yet, the index is kept), against the same on the local tree of its shape."""
    lacking = files_window.missing_programs()
    if lacking:
        return [Row("scale: GNOME Files opening the big folder", "not run", f"needs {lacking}",
                    None, None)]  # fmt: skip
    mount = _mount(ctx, url, cache)
    try:
        mount.start(timeout=300)  # its index ready: nothing listed yet
        before = int(mount.status()["api_calls"])
        ctx.drop_caches()
        opened = files_window.open_folder(mount.mountpoint / FOLDER, ctx.scratch("files-mount"),
                                          [mount.pid])  # fmt: skip
        spent = int(mount.status()["api_calls"]) - before
        rss_mib = rss_kib(mount.pid) / 1024
    finally:
        mount.stop()
    ctx.drop_caches()
    local = files_window.open_folder(local_tree, ctx.scratch("files-local"))
    where = f"{FOLDER} ({count} documents)"
    return [
        Row(
            f"scale: GNOME Files opening {where}, until it shows the folder",
            seconds(opened.shown),
            f"local folder of as many directories: {seconds(local.shown)}",
            opened.shown / local.shown,
            Aim(False, 2),
            f"{spent}",
        ),
        Row(
            f"scale: GNOME Files opening {where}, until it and the mount are done (its"
            " item count of every document folder)",
            seconds(opened.settled),
            f"local: {seconds(local.settled)}",
            opened.settled / local.settled,
            Aim(False, 2),
            f"{spent}",
        ),
        Row(
            "scale: daemon memory (VmRSS) after GNOME Files opened the big folder",
            f"{rss_mib:.0f} MiB",
            "aim: 200 MiB",
            rss_mib,
            Aim(False, 200),
        ),
    ]
