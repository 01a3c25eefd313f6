"""The commands that manage a running mount: ``status``, ``flush``, ``refresh`` and
``umount``.

Owns what a user sees of a running daemon: the status table (or its json), uploading
pending work now with progress until it is in the vault, looking for the vault's
changes now rather than at the next poll, and an unmount that never
drops work silently: ``umount`` first waits for every pending upload, and without
``--force`` it refuses (exit 1, naming the documents) when they do not get through in
time. Work left behind by ``--force`` is still safe in the spool and is checked in at
the next mount. How to reach the daemon is ``control``'s business.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vaultfs.bridge.commands import control
from vaultfs.bridge.tree.nodes import CONTROL_DIR, LOST_AND_FOUND
from vaultfs.bridge.write.spool.states import EntryState
from vaultfs.profiles import ProfileError, load_profile, names_profile

__all__ = ["format_status", "human_size", "register"]

#: how often progress is polled from the status file, and how often a flush that is
#: still waiting asks the daemon again (a failed try backs off for minutes otherwise)
_POLL = 0.2
_RESIGNAL = 10.0
#: how long files still open for writing are waited for once they are all that is
#: left: a file closed a moment ago stays open until the kernel's release reaches the
#: daemon (milliseconds); one a program keeps open is not closed by waiting
_OPEN_GRACE = 2.0
#: the state of a spool entry or new file whose program still holds it open
_OPEN = EntryState.EDITING


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    status = sub.add_parser("status", help="show what a mount is doing (every mount by default)")
    status.add_argument("target", nargs="?", metavar="MOUNTPOINT|PROFILE")
    status.add_argument("--json", action="store_true", help="print the status as json")
    status.set_defaults(handler=_status)

    flush = sub.add_parser("flush", help="upload a mount's pending work now and wait for it")
    flush.add_argument("target", metavar="MOUNTPOINT|PROFILE")
    flush.add_argument("--timeout", type=float, default=60.0, help="seconds to wait (60)")
    flush.set_defaults(handler=_flush)

    refresh = sub.add_parser(
        "refresh", help="show the vault's changes in a mount now, not at its next poll"
    )
    refresh.add_argument("target", metavar="MOUNTPOINT|PROFILE")
    refresh.add_argument("--timeout", type=float, default=60.0, help="seconds to wait (60)")
    refresh.set_defaults(handler=_refresh)

    umount = sub.add_parser("umount", help="upload pending work, then unmount")
    umount.add_argument("target", metavar="MOUNTPOINT|PROFILE")
    umount.add_argument(
        "--timeout", type=float, default=60.0, help="seconds to wait for pending uploads (60)"
    )
    umount.add_argument(
        "--force",
        action="store_true",
        help="unmount even with uploads pending (they stay in the spool for the next mount)",
    )
    umount.set_defaults(handler=_umount)


def _mountpoint(target: str) -> Path:
    if names_profile(target):
        return load_profile(target).mountpoint.resolve()
    return Path(target).expanduser().resolve()


# --- status -----------------------------------------------------------------------


def _status(args: argparse.Namespace) -> int:
    try:
        mountpoints = [_mountpoint(args.target)] if args.target else control.vaultfs_mounts()
    except (ProfileError, OSError) as exc:
        print(f"vaultfs status: {exc}", file=sys.stderr)
        return 2
    results: list[dict[str, Any]] = []
    for mountpoint in mountpoints:
        try:
            results.append(control.read_status(mountpoint))
        except (OSError, ValueError) as exc:
            results.append({"mountpoint": str(mountpoint), "error": str(exc)})
    if args.json:
        print(json.dumps(results[0] if args.target else results, indent=2, sort_keys=True))
    elif not results:
        print("no vaultfs mounts")
    else:
        print("\n\n".join(format_status(status) for status in results))
    return 1 if any("error" in status for status in results) else 0


def human_size(n: float) -> str:
    """Bytes as people read them: ``512 B``, ``1.5 MiB``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "never"
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def _file(entry: dict[str, Any]) -> str:
    """The file an entry is about: its path in the mount, else what the daemon knows."""
    if entry.get("path"):
        return str(entry["path"])
    if entry.get("doc_id") is not None:
        return f"doc {entry['doc_id']} {entry.get('filename')}"
    return str(entry.get("filename") or entry.get("file") or "?")


def _table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "    " + "".join(cell.ljust(w + 2) for cell, w in zip(row, widths, strict=False)) + row[-1]
        for row in rows
    ]


def _pending_table(entries: list[dict[str, Any]]) -> list[str]:
    rows = [("FILE", "STATE", "AGE", "TRIES", "LAST ERROR")]
    rows += [
        (
            _file(e),
            str(e.get("state")),
            _age(e.get("age_seconds")) if "age_seconds" in e else "",
            str(e.get("attempts", "")),
            str(e.get("last_error") or ""),
        )
        for e in entries
    ]
    return _table(rows)


def _waiting_table(waiting: list[dict[str, Any]]) -> list[str]:
    rows = [("FILE", "MISSING FIELDS", "THE VAULT SAID")]
    rows += [
        (_file(w), ", ".join(str(m) for m in w.get("missing") or []), str(w.get("error") or ""))
        for w in waiting
    ]
    return _table(rows)


def _lost_lines(lost: list[dict[str, Any]]) -> list[str]:
    lines = []
    for item in lost:
        # the mount lists the file; the record says what it was saved as and why
        where = item.get("mount_path") or item.get("path") or item.get("file")
        saved = item.get("saved_as") or (
            f"doc {item['doc_id']} {item.get('filename')}"
            if item.get("doc_id") is not None
            else item.get("filename")
        )
        lines.append(f"    {where}")
        why = f": {item['error']}" if item.get("error") else ""
        lines.append(f"      saved as {saved}{why}")
    return lines


def _walks_line(walks: dict[str, Any]) -> str:
    """The walks' share: what is left, and the program stopped or the biggest spender."""
    if not walks:
        return "?"
    line = (
        f"{walks.get('left')} of {walks.get('burst')} calls left "
        f"({walks.get('calls_per_day')} a day), {walks.get('spent', 0)} spent"
    )
    stopped = walks.get("stopped")
    if stopped:
        return f"{line}; {stopped.get('program')} stopped at {stopped.get('calls')} calls"
    programs = walks.get("programs") or []
    if programs:
        top = programs[0]
        return f"{line}, most by {top.get('program')} ({top.get('calls')})"
    return line


def _reach_line(vault: dict[str, Any]) -> str:
    """Whether the vault can be reached: online, or offline since when and why."""
    state = vault.get("state") or "online"
    if state == "online":
        return "online"
    reason = f" ({vault['reason']})" if vault.get("reason") else ""
    return f"{state} since {vault.get('since')}: {vault.get('message')}{reason}"


def _pinned_lines(pinned: dict[str, Any], vault: dict[str, Any]) -> list[str]:
    """The documents kept for offline: a summary, the paths the daemon named, and the
    downloads that failed."""
    count = int(pinned.get("documents") or 0)
    if not count:
        return [f"  {'pinned':<16} none"]
    line = f"{count} document{'s' if count != 1 else ''}, {human_size(pinned.get('bytes') or 0)}"
    waiting = int(pinned.get("waiting") or 0)
    if not waiting:
        line += ", all kept for offline"
    else:
        line += f", {human_size(pinned.get('to_download') or 0)} to download ({waiting})"
        if (vault.get("state") or "online") != "online":
            line += ": waiting for the vault"
    lines = [f"  {'pinned':<16} {line}"]
    lines += [f"    {path}" for path in pinned.get("paths") or [] if path]
    if pinned.get("more"):
        lines.append(f"    ... and {pinned['more']} more")
    for failed in pinned.get("failed") or []:
        where = failed.get("path") or f"doc {failed.get('doc_id')}"
        lines.append(f"    not downloaded: {where}: {failed.get('error')}")
    return lines


def format_status(status: dict[str, Any]) -> str:
    """The human form of one mount's status."""
    if "error" in status:
        return f"{status['mountpoint']}\n  not answering: {status['error']}"
    index = status.get("index", {})
    cache = status.get("cache", {})
    budget = status.get("budget_remaining", {})
    pending = control.not_in_vault(status)
    lost = status.get("lost_and_found", [])
    waiting = status.get("pending_new_documents") or []
    rows = [
        ("vault", status.get("vault_url")),
        ("user", status.get("user")),
        ("session", status.get("session_state")),
        ("reach", _reach_line(status.get("vault") or {})),
        ("mode", "read-only" if status.get("read_only") else "read-write"),
        (
            "index",
            f"{index.get('documents')} documents, refreshed {_age(index.get('age_seconds'))}"
            + (" ago" if index.get("age_seconds") is not None else "")
            if index.get("ready", True)
            else f"building: {index.get('indexed', 0)} of {index.get('total') or '?'} documents"
            + (
                f", about {_age(index['seconds_left'])} left"
                if index.get("seconds_left") is not None
                else ""
            ),
        ),
        (
            "cache",
            f"{human_size(cache.get('bytes', 0))} of {human_size(cache.get('limit', 0))} "
            f"in {cache.get('files', 0)} files",
        ),
        (
            "API budget left",
            f"burst {budget.get('burst', '?')}, daily {budget.get('daily', '?')} "
            f"({status.get('api_calls', 0)} calls made)",
        ),
        ("walks", _walks_line(status.get("walks") or {})),
        ("pending uploads", str(len(pending)) if pending else "none"),
    ]
    lines = [f"{status.get('mountpoint')}  (daemon pid {status.get('pid')})"]
    lines += [f"  {name:<16} {value}" for name, value in rows]
    if pending:
        lines += _pending_table(pending)
    lines.append(f"  {'waiting fields':<16} {len(waiting) if waiting else 'none'}")
    if waiting:
        lines += _waiting_table(waiting)
    lines.append(f"  {'lost+found':<16} {len(lost) if lost else 'none'}")
    lines += _lost_lines(lost)
    if "pinned" in status:  # (a daemon older than pins says nothing of them)
        lines += _pinned_lines(status["pinned"], status.get("vault") or {})
    return "\n".join(lines)


# --- flush and umount -------------------------------------------------------------


def _describe(entries: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"  {_file(e)}: "
        + (
            "open for writing by a program"
            if e.get("state") == _OPEN
            else f"{e.get('state')}, {e.get('attempts', 0)} tries"
            + (f", last error: {e['last_error']}" if e.get("last_error") else "")
        )
        for e in entries
    )


def _still_open(entries: list[dict[str, Any]]) -> bool:
    return bool(entries) and all(e.get("state") == _OPEN for e in entries)


def _drain(
    mountpoint: Path, pid: int, timeout: float, what: str
) -> tuple[bool, list[dict[str, Any]]]:
    """Ask the daemon to upload, printing progress, until nothing is pending or the
    timeout passes; (drained, what is still pending)."""
    deadline = time.monotonic() + timeout
    asked = -_RESIGNAL
    shown: int | None = None
    open_since: float | None = None
    while True:
        entries = control.not_in_vault(control.read_status(mountpoint))
        if not entries:
            return True, []
        if not _still_open(entries):
            open_since = None
        elif open_since is None:
            open_since = time.monotonic()
        elif time.monotonic() - open_since >= _OPEN_GRACE:
            return False, entries  # waiting does not close a program's file
        if len(entries) != shown:
            editing = sum(e.get("state") == _OPEN for e in entries)
            note = f" ({editing} open for writing)" if editing else ""
            print(f"{what}: {len(entries)} upload(s) pending{note}", flush=True)
            shown = len(entries)
        now = time.monotonic()
        if now >= deadline:
            return False, entries
        if now - asked >= _RESIGNAL:
            control.send(pid, control.FLUSH_SIGNAL)
            asked = now
        time.sleep(_POLL)


def _flush(args: argparse.Namespace) -> int:
    try:
        mountpoint = _mountpoint(args.target)
        status = control.read_status(mountpoint)
        drained, left = _drain(mountpoint, status["pid"], args.timeout, "vaultfs flush")
    except (ProfileError, OSError, ValueError) as exc:
        print(f"vaultfs flush: {exc}", file=sys.stderr)
        return 2
    if drained:
        print(f"vaultfs flush: everything written to {mountpoint} is in the vault")
        return 0
    after = "" if _still_open(left) else f" after {args.timeout:g}s"
    print(
        f"vaultfs flush: {len(left)} upload(s) still pending{after}:\n" + _describe(left),
        file=sys.stderr,
    )
    return 1


def _refresh(args: argparse.Namespace) -> int:
    try:
        mountpoint = _mountpoint(args.target)
        status = control.refresh(mountpoint, args.timeout)
    except (ProfileError, OSError, ValueError) as exc:
        print(f"vaultfs refresh: {exc}", file=sys.stderr)
        return 2
    if status is None:
        print(
            f"vaultfs refresh: no answer from {mountpoint} after {args.timeout:g}s", file=sys.stderr
        )
        return 1
    error = status["index"].get("poll_error")
    if error:
        print(f"vaultfs refresh: the vault did not answer: {error}", file=sys.stderr)
        return 1
    documents = status["index"]["documents"]
    print(f"vaultfs refresh: {mountpoint} shows the vault as of now ({documents} documents)")
    return 0


def _refusal(mountpoint: Path, left: list[dict[str, Any]]) -> str:
    """Why ``umount`` does not unmount: files a program holds open come first (closing
    them is what helps), then uploads the vault has not taken."""
    held = [e for e in left if e.get("state") == _OPEN]
    uploads = [e for e in left if e.get("state") != _OPEN]
    lines = [f"vaultfs umount: not unmounting {mountpoint}:"]
    lines += [
        f"  {mountpoint / e['path'] if e.get('path') else _file(e)} is open for writing "
        "by a program; close it first"
        for e in held
    ]
    if uploads:
        lines.append(f"{len(uploads)} save(s) are not in the vault yet:\n{_describe(uploads)}")
        lines.append("Try again once the vault is reachable, or use --force to unmount now")
    else:
        lines.append("Close it, or use --force to unmount now")
    lines[-1] += " (the spool keeps the content and uploads it at the next mount)."
    return "\n".join(lines)


def _name_lost(mountpoint: Path, status: dict[str, Any]) -> None:
    """What the vault refused (a save, a dropped file) is named at the unmount: it is
    kept in the cache's lost+found, which the mount no longer shows afterwards."""
    with contextlib.suppress(OSError, ValueError):
        status = control.read_status(mountpoint)  # what the drain ended with
    lost = status.get("lost_and_found") or []
    if not lost:
        return
    where = Path(str(status.get("cache_dir") or "the cache directory")) / "spool" / "lost+found"
    print(
        f"vaultfs umount: {len(lost)} file(s) the vault refused are kept in {where} "
        f"(shown in {CONTROL_DIR}/{LOST_AND_FOUND} of the next mount):",
        file=sys.stderr,
    )
    print("\n".join(_lost_lines(lost)), file=sys.stderr)


def _umount(args: argparse.Namespace) -> int:
    try:
        mountpoint = _mountpoint(args.target)
    except ProfileError as exc:
        print(f"vaultfs umount: {exc}", file=sys.stderr)
        return 2
    try:
        status = control.read_status(mountpoint)
    except (OSError, ValueError) as exc:
        if mountpoint not in control.vaultfs_mounts():
            print(f"vaultfs umount: {mountpoint} is not a vaultfs mount ({exc})", file=sys.stderr)
            return 1
        # A mount whose daemon is gone or hangs: only the kernel's side is left to undo.
        return 0 if control.unmount(mountpoint) else 1
    pid: int = status["pid"]
    vault = status.get("vault") or {}
    try:
        if not args.force and vault.get("state", "online") != "online":
            # Offline: nothing would go in by waiting. Files still open refuse as ever.
            left = control.not_in_vault(status)
            if any(e.get("state") == _OPEN for e in left):
                print(_refusal(mountpoint, left), file=sys.stderr)
                return 1
            if left:
                print(
                    f"vaultfs umount: the vault cannot be reached (offline since "
                    f"{vault.get('since')}): {len(left)} save(s) are kept in the spool, and "
                    f"the next mount, online or offline, checks them in:\n{_describe(left)}",
                    file=sys.stderr,
                )
        elif not args.force:
            drained, left = _drain(mountpoint, pid, args.timeout, "vaultfs umount")
            if not drained:
                print(_refusal(mountpoint, left), file=sys.stderr)
                return 1
        else:
            left = control.not_in_vault(status)
            if left:
                print(
                    f"vaultfs umount: {len(left)} upload(s) kept in the spool for the next "
                    f"mount:\n{_describe(left)}",
                    file=sys.stderr,
                )
        _name_lost(mountpoint, status)
        control.send(pid, control.STOP_NOW_SIGNAL if args.force else control.STOP_SIGNAL)
    except OSError as exc:  # PermissionError: a daemon of another user
        print(f"vaultfs umount: cannot signal the daemon (pid {pid}): {exc}", file=sys.stderr)
        return 1
    if control.wait_gone(pid, args.timeout):
        return 0
    print(f"vaultfs umount: daemon {pid} still running; unmounting anyway", file=sys.stderr)
    return 0 if control.unmount(mountpoint, lazy=args.force) else 1
