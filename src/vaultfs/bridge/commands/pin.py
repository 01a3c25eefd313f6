"""``vaultfs pin PATH...`` and ``vaultfs unpin PATH...``: keep documents for offline.

They speak to the mount's daemon through the extended attribute ``user.vaultfs.pin``
of each PATH, as the lifecycle commands do, so they need no credentials and no
pyfuse3 (the daemon's side is ``bridge.content.pins``):

* ``vaultfs pin PATH...`` writes ``1``: every document PATH stands for (a document's
  directory or file, a folder of the type hierarchy and everything below it, a view
  or a search's folder: its current answer; the mount point: every document) is
  pinned, and its latest content downloaded in the background and kept out of the
  cache's eviction. It returns once the daemon has the pins on disk; ``--wait``
  waits, with a deadline (``--timeout``), until their content is all in the cache,
  reading back ``user.vaultfs.pin`` (what is left to download under PATH) and the
  mount's status (whether the vault can be reached, what failed);
* ``vaultfs unpin PATH...`` writes ``0``: the documents leave the set; their content
  stays in the cache, evictable again.

A pin the content cache cannot hold (with what is pinned already) is refused by the
daemon with ENOSPC; the numbers (pinned now, asked, the cache's size) are read back
from ``user.vaultfs.pin`` and printed.

Exit codes: 0 done (with ``--wait``: and all downloaded), 1 refused or not all
downloaded in time (the reason on stderr), 2 a usage error (a PATH that is not on a
vaultfs mount, or does not exist).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from vaultfs.bridge.commands import control
from vaultfs.bridge.commands.manage import human_size
from vaultfs.bridge.commands.sync import mount_of

__all__ = ["PIN", "register"]

#: the daemon's attribute (``bridge.content.pins.PIN_XATTR``, which a test checks
#: this is: the command loads none of the daemon's side, trio and the content cache)
PIN = "user.vaultfs.pin"
#: how often ``--wait`` reads what is left
_POLL = 0.2


class _Usage(Exception):
    """The command was given something it cannot work on (exit 2)."""


class _Refused(Exception):
    """The daemon refused, or waiting did not bring everything (exit 1)."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pin = sub.add_parser(
        "pin", help="keep documents for offline: download them and keep them in the cache"
    )
    pin.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        type=Path,
        help="a document's directory or file, a folder, a view, or the mount point",
    )
    pin.add_argument(
        "--wait", action="store_true", help="return once their content is all downloaded"
    )
    pin.add_argument(
        "--timeout", type=float, default=600.0, help="seconds --wait waits at most (600)"
    )
    pin.set_defaults(handler=_pin)

    unpin = sub.add_parser(
        "unpin", help="no longer keep documents for offline (their content may be evicted)"
    )
    unpin.add_argument("paths", nargs="+", metavar="PATH", type=Path)
    unpin.set_defaults(handler=_unpin)


# --- talking to the daemon ----------------------------------------------------------


def _mountpoint(path: Path) -> Path:
    """The vaultfs mount holding ``path``; ``_Usage`` when there is none."""
    if not path.exists():
        raise _Usage(f"{path}: no such file or directory")
    found = mount_of(path, control.vaultfs_mounts())
    if found is None:
        raise _Usage(f"{path} is not on a vaultfs mount")
    return found[0]


def _described(path: Path) -> dict[str, Any]:
    """What pinning ``path`` means, as the daemon says (``Pins.describe``)."""
    try:
        value: dict[str, Any] = json.loads(os.getxattr(path, PIN))
    except OSError as exc:
        raise _Refused(f"{path}: {_why(path, exc)}") from None
    except ValueError as exc:
        raise _Refused(f"{path}: the mount answered no json ({exc})") from None
    return value


def _why(path: Path, exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        said = _described(path)
        return (
            f"not pinned: it needs {human_size(said.get('adds_bytes') or 0)} more "
            f"({said.get('documents')} document(s), {said.get('pinned')} pinned already); "
            f"{human_size(said.get('pinned_bytes') or 0)} is pinned now and the content "
            f"cache holds {human_size(said.get('cache_bytes') or 0)}: unpin something, "
            "or mount with a bigger -o cache_size"
        )
    if exc.errno in (errno.ENOTSUP, errno.ENODATA):
        return "only a document, a folder or a view can be pinned"
    if exc.errno == errno.EROFS:
        return "the mount is read-only (-o ro): pin on a read-write mount of its cache"
    if exc.errno == errno.EHOSTUNREACH:
        return f"{exc.strerror}: what it holds needs the vault, which cannot be reached now"
    return exc.strerror or str(exc)


def _set(path: Path, value: bytes) -> None:
    try:
        os.setxattr(path, PIN, value)
    except OSError as exc:
        raise _Refused(f"{path}: {_why(path, exc)}") from None


def _run(command: str, body: Any, args: argparse.Namespace) -> int:
    try:
        return int(body(args))
    except _Usage as exc:
        print(f"vaultfs {command}: {exc}", file=sys.stderr)
        return 2
    except _Refused as exc:
        print(f"vaultfs {command}: {exc}", file=sys.stderr)
        return 1


# --- pin ----------------------------------------------------------------------------


def _pin(args: argparse.Namespace) -> int:
    return _run("pin", _pin_all, args)


def _pin_all(args: argparse.Namespace) -> int:
    mounts = {path: _mountpoint(path) for path in args.paths}  # every PATH checked first
    refused = 0
    for path in args.paths:
        try:
            _set(path, b"1")
        except _Refused as exc:
            print(f"vaultfs pin: {exc}", file=sys.stderr)
            refused += 1
            continue
        said = _described(path)
        left = int(said.get("to_download") or 0)
        print(
            f"{path}: {said.get('documents')} document(s) pinned, "
            f"{human_size(said.get('bytes') or 0)}"
            + (f", {human_size(left)} to download" if left else ", all kept")
        )
    if refused:
        return 1
    if args.wait:
        _wait(args.paths, mounts, time.monotonic() + max(0.0, args.timeout))
        for path in args.paths:
            print(f"{path}: all kept for offline")
    return 0


def _wait(paths: list[Path], mounts: dict[Path, Path], deadline: float) -> None:
    """Until nothing under ``paths`` is left to download; ``_Refused`` at the deadline,
    when the vault cannot be reached, or when all that is left failed."""
    waiting = list(paths)
    while waiting:
        for path in list(waiting):
            if not int(_described(path).get("to_download") or 0):
                waiting.remove(path)
        if not waiting:
            return
        for mountpoint in dict.fromkeys(mounts[p] for p in waiting):
            try:
                status = control.read_status(mountpoint)
            except (OSError, ValueError) as exc:
                raise _Refused(f"{mountpoint} does not answer: {exc}") from None
            vault = status.get("vault") or {}
            pinned = status.get("pinned") or {}
            if (vault.get("state") or "online") != "online":
                raise _Refused(
                    f"{mountpoint}: {vault.get('message')}: "
                    f"{human_size(pinned.get('to_download') or 0)} wait to be downloaded "
                    "once it is back (they stay pinned)"
                )
            failed = pinned.get("failed") or []
            if failed and len(failed) >= int(pinned.get("waiting") or 0):
                names = "; ".join(
                    f"{f.get('path') or 'doc ' + str(f.get('doc_id'))}: {f.get('error')}"
                    for f in failed
                )
                raise _Refused(f"not downloaded (tried again later): {names}")
        if time.monotonic() >= deadline:
            raise _Refused(
                "not all downloaded in time: "
                + ", ".join(
                    f"{p} ({human_size(_described(p).get('to_download') or 0)} left)"
                    for p in waiting
                )
            )
        time.sleep(_POLL)


# --- unpin --------------------------------------------------------------------------


def _unpin(args: argparse.Namespace) -> int:
    return _run("unpin", _unpin_all, args)


def _unpin_all(args: argparse.Namespace) -> int:
    for path in args.paths:
        _mountpoint(path)
    refused = 0
    for path in args.paths:
        try:
            before = int(_described(path).get("pinned") or 0)
            _set(path, b"0")
        except _Refused as exc:
            print(f"vaultfs unpin: {exc}", file=sys.stderr)
            refused += 1
            continue
        print(f"{path}: {before} document(s) unpinned (their content stays in the cache)")
    return 1 if refused else 0
