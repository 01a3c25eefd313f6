"""``vaultfs sync [PATH...]``: the barrier a script waits on until the vault has its saves.

close() of a file on a mount returns once what was written is safe in the local spool;
the upload follows in the background. ``vaultfs sync PATH`` returns (exit 0) once the
vault has every save made under PATH, or says per file why it does not (exit 1)::

    cp report.pdf ~/vault/General/Report/ && vaultfs sync ~/vault/General/Report/

The decisions (written down for users in docs/reference.md and the user guide):

* PATH is any path on a mount (a document directory, a file, a folder, the mount
  point); without one, every vaultfs mount this user can read is synced.
* It asks each daemon to upload now (``SIGUSR1``, what ``vaultfs flush`` does) and
  waits, polling the mount's status, until nothing under PATH is on its way or the
  deadline (``--timeout``, 60 s) passes. Nothing is waited for forever.
* On its way: a spool entry (a draft, a rendition, an attachment), including one whose
  file a program still holds open (``editing``: a file closed a moment ago is that
  until the kernel's release reaches the daemon), and a new file still open or being
  created. At the deadline, each one left is named with why: still open for writing
  by a program, or not in the vault yet with its last error.
* Never reached without the user: a new file waiting for fields, and content in
  lost+found. These make the sync fail at once, naming the file, the missing fields
  or the vault's refusal. A lost+found file counts until the user removes it from
  ``.vaultfs/lost+found`` (that is how a rescue is acknowledged); one whose file is
  not known (a new document: its folder is not recorded) counts for a sync of the
  whole mount only. A spool entry whose path the daemon cannot tell counts for every
  PATH on its mount: a barrier rather waits too long than says yes wrongly.

Exit codes: 0 the vault has everything, 1 it does not (the reasons on stderr), 2
PATH is not on a vaultfs mount or the mount does not answer.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vaultfs.bridge.commands import control
from vaultfs.bridge.write.spool.states import EntryState

__all__ = ["Pending", "find_pending", "mount_of", "register", "under"]

#: how often the status is read while waiting, and how often a daemon still holding
#: uploads is asked again (a failed try otherwise backs off for minutes)
_POLL = 0.1
_RESIGNAL = 10.0
#: states of a spool entry or new file whose program still holds it open
_OPEN = EntryState.EDITING


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sync = sub.add_parser(
        "sync",
        help="wait until the vault has every save made under PATH (every mount by default)",
    )
    sync.add_argument("paths", nargs="*", metavar="PATH", type=Path)
    sync.add_argument("--timeout", type=float, default=60.0, help="seconds to wait (60)")
    sync.set_defaults(handler=_sync)


def under(path: str | None, prefix: str) -> bool:
    """Whether the mount-relative ``path`` is ``prefix`` or inside it ("" is the whole
    mount); an unknown path (None) is inside the whole mount only."""
    if prefix == "":
        return True
    if path is None:
        return False
    return path == prefix or path.startswith(prefix + "/")


@dataclass
class Pending:
    """One save under a PATH that the vault does not have."""

    #: its path in the mount (None: the daemon could not tell)
    path: str | None
    why: str
    #: whether waiting can help (an upload on its way) or the user must act
    on_its_way: bool
    #: still held open by a program
    open: bool = False


def _items(entries: Any) -> list[dict[str, Any]]:
    return [e for e in entries or [] if isinstance(e, dict)]


def _upload_why(entry: dict[str, Any]) -> str:
    state = entry.get("state")
    if state == _OPEN:
        return "open for writing by a program; it is uploaded when the program closes it"
    tries = entry.get("attempts") or 0
    why = f"not in the vault yet ({state}, {tries} tr{'y' if tries == 1 else 'ies'}"
    return why + (f"; last error: {entry['last_error']})" if entry.get("last_error") else ")")


def find_pending(status: dict[str, Any], prefixes: list[str]) -> list[Pending]:
    """What the status says the vault does not have under any of ``prefixes``
    (mount-relative paths, "" for the whole mount)."""

    def wanted(path: str | None, *, unknown_counts: bool) -> bool:
        if path is None and unknown_counts:
            return True
        return any(under(path, prefix) for prefix in prefixes)

    found: list[Pending] = []
    for entry in _items(status.get("pending_uploads")):
        path = entry.get("path")
        if wanted(path, unknown_counts=True):
            why = _upload_why(entry)
            if path is None and entry.get("doc_id") is None:  # a create in the queue
                why = f"new document {entry.get('filename')}: {why}"
            elif path is None:
                why = f"document {entry.get('doc_id')} ({entry.get('filename')}): {why}"
            found.append(Pending(path, why, True, entry.get("state") == _OPEN))
    for new in _items(status.get("new_files")):
        if wanted(new.get("path"), unknown_counts=True):
            is_open = new.get("state") == _OPEN
            why = (
                "a new file open for writing by a program; it is created when the program closes it"
                if is_open
                else "a new file being created in the vault"
            )
            found.append(Pending(new.get("path"), why, True, is_open))
    for waiting in _items(status.get("pending_new_documents")):
        if wanted(waiting.get("path"), unknown_counts=False):
            missing = ", ".join(str(m) for m in waiting.get("missing") or []) or "?"
            why = f"a new file waiting for fields: {missing}"
            if waiting.get("error"):
                why += f" (the vault said: {waiting['error']})"
            why += "; supply each with setfattr -n user.vault.FIELD -v VALUE on the file"
            if waiting.get("path") is None:
                why = f"{waiting.get('file')}: {why}"
            found.append(Pending(waiting.get("path"), why, False))
    for lost in _items(status.get("lost_and_found")):
        if wanted(lost.get("saved_as"), unknown_counts=False):
            where = lost.get("mount_path") or lost.get("file")
            why = (
                f"refused by the vault, content kept in {where}: {lost.get('error')} "
                "(remove it there once rescued)"
            )
            found.append(Pending(lost.get("saved_as") or str(where), why, False))
    return found


@dataclass
class _Mount:
    mountpoint: Path
    prefixes: list[str] = field(default_factory=list)
    pid: int = 0
    left: list[Pending] = field(default_factory=list)
    asked: float = -_RESIGNAL


def mount_of(path: Path, mounts: list[Path]) -> tuple[Path, str] | None:
    """(the vaultfs mount holding ``path``, ``path`` relative to it)."""
    real = os.path.realpath(path)
    holding = [m for m in mounts if real == str(m) or real.startswith(str(m).rstrip("/") + "/")]
    if not holding:
        return None
    mount = max(holding, key=lambda m: len(str(m)))
    return mount, os.path.relpath(real, mount) if real != str(mount) else ""


def _targets(paths: list[Path]) -> dict[Path, _Mount]:
    """The mounts to sync and the prefixes in each; ``ValueError`` names a PATH that is
    not on a vaultfs mount."""
    mounts = control.vaultfs_mounts()
    targets: dict[Path, _Mount] = {}
    if not paths:
        for mountpoint in mounts:
            targets.setdefault(mountpoint, _Mount(mountpoint)).prefixes.append("")
        return targets
    for path in paths:
        found = mount_of(path, mounts)
        if found is None:
            raise ValueError(f"{path} is not on a vaultfs mount")
        mountpoint, prefix = found
        targets.setdefault(mountpoint, _Mount(mountpoint)).prefixes.append(
            "" if prefix == "." else prefix
        )
    return targets


def _sync(args: argparse.Namespace) -> int:
    try:
        targets = _targets(args.paths)
    except (ValueError, OSError) as exc:
        print(f"vaultfs sync: {exc}", file=sys.stderr)
        return 2
    deadline = time.monotonic() + max(0.0, args.timeout)
    waiting = list(targets.values())
    done: list[_Mount] = []
    while waiting:
        for mount in list(waiting):
            try:
                status = control.read_status(mount.mountpoint)
            except PermissionError:
                if args.paths:
                    print(f"vaultfs sync: {mount.mountpoint}: not this user's", file=sys.stderr)
                    return 2
                waiting.remove(mount)  # every mount: another user's is not ours to wait on
                continue
            except (OSError, ValueError) as exc:
                print(f"vaultfs sync: {mount.mountpoint} does not answer: {exc}", file=sys.stderr)
                return 2
            mount.pid = status["pid"]
            mount.left = find_pending(status, mount.prefixes)
            if not any(p.on_its_way for p in mount.left):
                waiting.remove(mount)
                done.append(mount)
        now = time.monotonic()
        if not waiting or now >= deadline:
            done += waiting
            break
        for mount in waiting:
            uploads = [p for p in mount.left if p.on_its_way and not p.open]
            if uploads and now - mount.asked >= _RESIGNAL:
                # Backoffs may be minutes long: a script waiting is the moment to try again.
                control.send(mount.pid, control.FLUSH_SIGNAL)
                mount.asked = now
        time.sleep(_POLL)
    return _report(done, args.timeout)


def _report(mounts: list[_Mount], timeout: float) -> int:
    left = [(mount, p) for mount in mounts for p in mount.left]
    if not left:
        return 0
    print(
        f"vaultfs sync: {len(left)} save(s) not in the vault"
        + (f" after {timeout:g}s" if any(p.on_its_way for _, p in left) else "")
        + ":",
        file=sys.stderr,
    )
    for mount, pending in left:
        where = mount.mountpoint / pending.path if pending.path else mount.mountpoint
        print(f"  {where}: {pending.why}", file=sys.stderr)
    return 1
