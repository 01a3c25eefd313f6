"""Talking to a running mount daemon from another process.

Owns what the ``status``, ``flush``, ``refresh`` and ``umount`` commands know about a mount from
outside: which vaultfs mounts exist (``/proc/mounts``), the daemon's status (the
mount's ``.vaultfs/status`` json, whose ``pid`` names the daemon), the signals the
daemon understands, and waiting for a daemon to go. The daemon's side of the signals
is in ``daemon.signals``:

- ``SIGUSR1``: try every pending upload now, and look for the vault's changes now;
- ``SIGTERM`` (also ``SIGINT``, ``SIGHUP``): flush pending uploads (bounded), unmount;
- ``SIGUSR2``: unmount now; pending uploads stay in the spool for the next mount.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from vaultfs.bridge.daemon.signals import FLUSH_SIGNAL, STOP_NOW_SIGNAL, STOP_SIGNAL
from vaultfs.bridge.tree.nodes import CONTROL_DIR

__all__ = [
    "FLUSH_SIGNAL",
    "FSTYPE",
    "STOP_NOW_SIGNAL",
    "STOP_SIGNAL",
    "alive",
    "clear_dead_mount",
    "not_in_vault",
    "read_status",
    "refresh",
    "send",
    "unmount",
    "vaultfs_mounts",
    "wait_gone",
]

#: the file system type the kernel lists for a vaultfs mount (``fuse.<subtype>``)
FSTYPE = "fuse.vaultfs"


def _unescape(field: str) -> str:
    """/proc/mounts writes space, tab, newline and backslash as octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def vaultfs_mounts(table: Path = Path("/proc/mounts")) -> list[Path]:
    """Mount points of every vaultfs mount, in mount order."""
    found = []
    for line in table.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[2] == FSTYPE:
            found.append(Path(_unescape(fields[1])))
    return found


def read_status(mountpoint: Path) -> dict[str, Any]:
    """The daemon's status; OSError when the mount does not answer, ValueError when
    what it answers is not a vaultfs status."""
    status = json.loads((mountpoint / CONTROL_DIR / "status").read_text())
    if not isinstance(status, dict) or not isinstance(status.get("pid"), int):
        raise ValueError(f"{mountpoint} does not answer like a vaultfs mount")
    return status


def not_in_vault(status: dict[str, Any]) -> list[dict[str, Any]]:
    """Spool entries whose content the vault does not have yet (open ones included),
    then new files still open for writing or being created."""
    entries: list[dict[str, Any]] = status.get("pending_uploads") or []
    new_files: list[dict[str, Any]] = status.get("new_files") or []
    return entries + new_files


def send(pid: int, signum: signal.Signals) -> bool:
    """Signal the daemon; False when it is gone."""
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        return False
    return True


def refresh(mountpoint: Path, timeout: float) -> dict[str, Any] | None:
    """Have the daemon look for the vault's changes now, and wait (polling its status,
    with a deadline) until that look is done; the status then, None after ``timeout``.
    OSError, ValueError: as ``read_status``."""
    deadline = time.monotonic() + timeout
    status = read_status(mountpoint)
    asked = int(status["index"]["polls_asked"])
    if not send(status["pid"], FLUSH_SIGNAL):
        raise ProcessLookupError(f"the daemon of {mountpoint} is gone")
    while True:
        status = read_status(mountpoint)
        if int(status["index"]["polls_answered"]) > asked:
            return status
        if time.monotonic() > deadline:
            return None
        time.sleep(0.02)


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (an exited child its parent has not reaped does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_gone(pid: int, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``pid`` to exit; whether it did."""
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def clear_dead_mount(mountpoint: Path) -> bool:
    """Lazily unmount a vaultfs mount whose daemon died ("transport endpoint is not
    connected"), so that a restart can mount there again; whether one was cleared."""
    try:
        # statfs always asks the daemon; a stat may be answered from the kernel's cache.
        os.statvfs(mountpoint)
        return False
    except OSError as exc:
        # ENOTCONN once the daemon is gone; ECONNABORTED while the kernel aborts it
        if exc.errno not in (errno.ENOTCONN, errno.ECONNABORTED):
            return False
    if mountpoint not in vaultfs_mounts():
        return False
    with contextlib.suppress(OSError):
        unmount(mountpoint)
    return True


def unmount(mountpoint: Path, *, lazy: bool = True) -> bool:
    """``fusermount3 -u`` (``-z``: lazily, even while files are open); True on success."""
    argv = ["fusermount3", "-u", *(["-z"] if lazy else []), str(mountpoint)]
    return subprocess.run(argv, check=False).returncode == 0
