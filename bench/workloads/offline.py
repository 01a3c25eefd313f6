"""Offline: a mount started with its vault away, and the drain once the vault is back.

Apart from the run's data set: the workload starts a vault of its own (the demo's
documents, which hold content, and ``Sizes.scale_docs`` made with the bulk create in
the scale workload's big folder). One mount online builds the index in a cache of
its own and reads ``_SAVES`` demo documents (their content is kept); it is unmounted.
Then, with the vault stopped, the same cache is mounted again: the row is the time
from the start of ``vaultfs mount`` until ``ls`` of the big folder returned whole
(the aim is the issue's, 2 s), beside the same start with the vault up (in the same
run: a second mount catching its kept index up). Offline, each of the ``_SAVES``
documents gets a line appended; the vault is started again, and the second row is
the time from its answering until the mount is online with nothing left to send,
with its API calls.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from vaultfs.testing.mount_process import MountProcess
from vaultfs.testing.vault_process import VaultProcess, wait_until

from ..context import Context
from ..results import Aim, Row, seconds
from .scale import FOLDER, SERVER_ARGS, build, session

__all__ = ["run"]

#: documents saved offline and checked in once the vault is back
_SAVES = 10
#: what a mount may take to start and list the big folder (offline or not)
_TIMEOUT = 600.0
_OPTIONS = "poll_interval=3600"
_LOGIN = "POST /auth"


def run(ctx: Context) -> list[Row]:
    count = ctx.sizes.scale_docs
    server = VaultProcess(ctx.workdir / "offline-server", extra_args=SERVER_ARGS)
    server.log_path = ctx.workdir / "offline-server.log"
    cache = ctx.scratch("offline-cache")
    root = ctx.scratch("offline-mount")
    try:
        server.start()
        with session(server) as client:
            build(client, count)
        with MountProcess(server.url, root, cache_dir=cache, options=_OPTIONS) as first:
            saved = _read_some(first.mountpoint)
        online = _listed_after_start(server.url, root, cache, count)
        server.stop()
        offline = _listed_after_start(server.url, root, cache, count, keep=True)
        mount = offline.mount
        try:
            for path in saved:
                with open(path, "ab") as f:
                    f.write(b"saved offline\n")
            wait_until(
                lambda: len(mount.status()["pending_uploads"]) == len(saved),
                timeout=60,
                what="the saves in the spool",
            )
            calls = _calls(mount)
            server.start()
            back = time.perf_counter()
            wait_until(lambda: _drained(mount), timeout=_TIMEOUT, what="the saves checked in")
            drain = time.perf_counter() - back
            spent = _calls(mount) - calls
            lost = len(mount.status()["lost_and_found"])
        finally:
            mount.stop()
        if lost:
            raise RuntimeError(f"{lost} save(s) made offline went to lost+found")
    finally:
        server.stop()
        shutil.rmtree(cache, ignore_errors=True)
    return [
        Row(
            f"offline: start with the vault away, until {FOLDER} ({count} documents) lists",
            seconds(offline.seconds),
            f"the same start online: {seconds(online.seconds)}",
            offline.seconds,  # the aim is in seconds: listed within 2 s of the start
            Aim(False, 2.0),
            f"0 (online: {online.calls})",
        ),
        Row(
            f"offline: {len(saved)} saves made offline, checked in once the vault is back",
            seconds(drain),
            "—",
            None,
            None,
            f"{spent} ({spent / len(saved):.1f} a save, the catch-up included)",
        ),
    ]


class _Started:
    def __init__(self, mount: MountProcess, seconds: float, calls: int) -> None:
        self.mount, self.seconds, self.calls = mount, seconds, calls


def _listed_after_start(
    url: str, root: Path, cache: Path, count: int, *, keep: bool = False
) -> _Started:
    """Mount ``cache`` and ``ls`` the big folder; the seconds from the start until the
    listing returned whole. ``keep``: the mount is left running (the caller stops it)."""
    mount = MountProcess(url, root, cache_dir=cache, options=_OPTIONS)
    started = time.perf_counter()
    mount.start(_TIMEOUT)
    try:
        listed = subprocess.run(
            ["ls", str(mount.mountpoint / FOLDER)], capture_output=True, check=True
        ).stdout.count(b"\n")
        took = time.perf_counter() - started
        if listed < count:
            raise RuntimeError(f"{FOLDER} listed {listed} of {count} documents")
        calls = _calls(mount)
    except BaseException:
        mount.stop()
        raise
    if not keep:
        mount.stop()
    return _Started(mount, took, calls)


def _read_some(mountpoint: Path) -> list[Path]:
    """Read ``_SAVES`` of the demo's documents with content; their source files."""
    found = []
    for directory in sorted((mountpoint / "General").iterdir()):
        if not directory.is_dir():
            continue
        files = [p for p in directory.iterdir() if p.is_file()]
        if files:
            files[0].read_bytes()
            found.append(files[0])
        if len(found) == _SAVES:
            break
    return found


def _drained(mount: MountProcess) -> bool:
    status = mount.status()
    return status["vault"]["state"] == "online" and not status["pending_uploads"]


def _calls(mount: MountProcess) -> int:
    status = mount.status()
    return int(status["api_calls"]) - int(status["api_calls_by_endpoint"].get(_LOGIN, 0))
