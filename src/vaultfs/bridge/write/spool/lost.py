"""The spool's lost+found: content the vault will not take, kept and never overwritten.

Owns ``<spool>/lost+found/`` (mode 0700): moving content there with a ``.json``
saying why (``keep_in_lost``, ``move_to_lost``), rescuing a restart's would-be new
documents from the scratch directory (``rescue_scratch``), setting aside records a
start cannot use (``set_aside``: the record to ``<spool>/quarantine/``, its content
here), listing what is there for the status, and removing a file the user has
rescued. Blocking: the spool runs these in a worker thread.

lost+found is what users read, so its names are readable: ``<label>-<file name>``,
undecodable bytes shown as U+FFFD, and a name too long for a local file name (a vault
takes longer ones) cut on a character boundary and ended with ``~`` and a short hash
of the whole name, which the ``.json`` keeps whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from vaultfs import durable
from vaultfs.bridge.tree.nodes import LOST_AND_FOUND
from vaultfs.bridge.write.spool import store

__all__ = [
    "QUARANTINE",
    "keep_in_lost",
    "list_lost",
    "lost_records",
    "move_to_lost",
    "remove_lost",
    "rescue_scratch",
    "set_all_aside",
    "set_aside",
    "usable_entries",
]

log = logging.getLogger(__name__)

#: where records a start could not read or use are kept (never read again)
QUARANTINE = "quarantine"
# Longest name of a lost+found file we make, leaving room for ".json.tmp" within the
# 255 bytes a POSIX file name may have.
_MAX_LOST_NAME = 200
#: longest extension kept whole when a name is cut
_MAX_EXT = 16


def readable(name: str) -> str:
    """``name`` as text a user can read: the surrogates ``os.fsdecode`` makes of bytes
    that are not UTF-8 shown as U+FFFD."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _lost_name(label: str, filename: str, n: int) -> str:
    """``<label>-<filename>``, `` (n)`` before the extension from the second on, cut
    to ``_MAX_LOST_NAME`` bytes with a hash of the whole name when it is longer."""
    # The file name comes from the vault or a user: keep it inside lost+found.
    safe = durable.safe_filename(readable(filename))
    stem, dot, ext = safe.rpartition(".")
    if not stem or len(ext.encode()) > _MAX_EXT:  # no extension, ".bashrc", or no real one
        stem, dot, ext = safe, "", ""
    tail = (f" ({n})" if n > 1 else "") + dot + ext
    name = f"{label}-{stem}{tail}"
    if len(name.encode()) <= _MAX_LOST_NAME:
        return name
    digest = hashlib.sha256(filename.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    tail = f"~{digest}{tail}"
    room = _MAX_LOST_NAME - len(f"{label}-".encode()) - len(tail.encode())
    # Cut on a character boundary: never half a UTF-8 sequence.
    cut = stem.encode()[: max(0, room)].decode("utf-8", "ignore")
    return f"{label}-{cut}{tail}"


def keep_in_lost(
    directory: Path, source: Path, label: str, filename: str, why: dict[str, Any]
) -> Path:
    """Move the file ``source`` to lost+found as ``<label>-<filename>``, with a ``.json``
    holding ``why``.

    Never overwrites: a taken name gets `` (2)``, `` (3)``... before its extension.
    Returns the content's new path. Blocking: run in a worker thread.
    """
    lost_dir = directory / LOST_AND_FOUND
    durable.ensure_private_dir(lost_dir)
    n = 1
    while True:
        target = lost_dir / _lost_name(label, filename, n)
        why_path = target.with_name(target.name + ".json")
        if not why_path.exists():
            try:
                # link() fails on an existing name where rename() would replace it
                os.link(source, target)
                break
            except FileExistsError:
                pass
        n += 1
    os.chmod(target, durable.FILE_MODE)
    try:
        durable.write_json_atomically(why_path, {**why, "content": target.name})
    except OSError as exc:
        # A full disk: the content is kept all the same (a link took no space), and
        # the reason goes to the log; the status lists the file without it.
        log.error("lost+found: %s kept, but its reason %s could not be written: %s",
                  target.name, why, exc)  # fmt: skip
        with contextlib.suppress(OSError):
            why_path.with_name(why_path.name + ".tmp").unlink()
    source.unlink()
    durable.fsync_dir(source.parent)
    return target


def rescue_scratch(directory: Path, in_flight: set[int]) -> list[Path]:
    """Move the files an earlier daemon was writing as new documents, and that it
    never got to create, to lost+found; returns where they went. Everything else in
    the scratch directory is editors' temporary files, left for the mount to clear.
    A file whose label is there but cannot be read is kept too (it may be a new
    document): nothing read here stops a start. ``in_flight``: the inodes of the
    contents of creates in the queue (``creates.contents_in_flight``). Blocking."""
    rescued: list[Path] = []
    scratch_dir = directory / store.SCRATCH
    if not scratch_dir.is_dir():
        return rescued
    for path in sorted(scratch_dir.iterdir()):
        try:
            if path.stat().st_ino in in_flight:
                continue  # closed and recorded as a create: the queue makes it
            label = os.getxattr(path, store.SCRATCH_XATTR)
            if path.stat().st_size == 0:
                continue
        except OSError:
            continue  # no label: an editor's temporary file
        try:
            target = _rescue(directory, path, label)
        except OSError as exc:
            log.error("spool: scratch file %s could not be kept in lost+found: %s", path, exc)
            continue
        if target is not None:
            rescued.append(target)
    return rescued


def _rescue(directory: Path, path: Path, label: bytes) -> Path | None:
    """Keep scratch file ``path`` in lost+found when its ``label`` says it was to be
    uploaded, or cannot be read; None when it is a temporary file."""
    try:
        meta = json.loads(label)
        name = meta["name"]
        if not isinstance(name, str):
            raise TypeError(f"name is {name!r}")
        upload = bool(meta.get("upload"))
        wanted = bool(meta["new_document"]) or upload
        what = (
            "a rendition or attachment (or a file dropped into a document's folder)"
            if upload
            else "a new document"
        ) + " being written when the daemon stopped"
        error_type = "DAEMON_STOPPED"
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        name, wanted, error_type = "content", True, "UNREADABLE_RECORD"
        what = f"a file being written when the daemon stopped, whose label is unreadable ({exc})"
        log.error("spool: scratch file %s has an unreadable label: %s", path.name, exc)
    if not wanted:
        return None
    why = {
        "doc_id": None,
        "filename": name,
        "error_type": error_type,
        "error_message": what,
        "lost": time.time(),
    }
    target = keep_in_lost(directory, path, "new", name, why)
    log.warning("spool: new file %r from before a restart kept in %s", readable(name), target)
    return target


def usable_entries(directory: Path) -> list[store.EntryRecord]:
    """The spool's entries found at start (``store.scan``), once every record that
    cannot be used is set aside. Blocking."""
    records, unusable = store.scan(directory)
    set_all_aside(directory, unusable)
    return records


def set_all_aside(directory: Path, unusable: list[store.Unusable]) -> None:
    """``set_aside`` each of ``unusable``; one that cannot be moved stays where it is
    (logged): a start goes on either way."""
    for bad in unusable:
        try:
            set_aside(directory, bad)
        except OSError as exc:
            log.error("spool: record %s could not be set aside: %s", bad.record, exc)


def set_aside(directory: Path, bad: store.Unusable) -> Path | None:
    """Set aside a record a start cannot use: the record goes to ``quarantine/`` as it
    was, its content (what a user wrote) to lost+found, where the status shows it.
    Returns where the content went (None: it had none). Blocking."""
    quarantine = directory / QUARANTINE
    durable.ensure_private_dir(quarantine)
    kept = quarantine / f"{bad.record.name}.{time.time_ns()}"
    os.rename(bad.record, kept)
    durable.fsync_dir(bad.record.parent)
    log.error("spool: record %s cannot be used (%s); set aside as %s", bad.record, bad.reason, kept)
    if bad.content is None:
        return None
    why = {
        "doc_id": int(bad.label) if bad.label.isdigit() else None,
        "filename": bad.filename,
        "error_type": "UNREADABLE_RECORD",
        "error_message": f"its record could not be used ({bad.reason}); kept as {kept}",
        "lost": time.time(),
    }
    target = keep_in_lost(directory, bad.content, bad.label, bad.filename or "content", why)
    log.warning("spool: the content of %s is kept in %s", bad.record.name, target)
    return target


def move_to_lost(directory: Path, record: store.EntryRecord, reason: dict[str, Any]) -> Path:
    """Move an entry's content to lost+found, with a ``.json`` saying why.

    Returns the content's new path. Blocking: run in a worker thread.
    """
    target = keep_in_lost(
        directory,
        store.data_path(directory, record.doc_id),
        str(record.doc_id),
        record.filename,
        {**asdict(record), **reason},
    )
    store.remove_entry(directory, record.doc_id)
    return target


#: What the status says of a lost+found file whose reason could not be written.
_REASON_UNKNOWN = {
    "error_type": "UNKNOWN",
    "error_message": "the reason could not be written (full disk?); see the log",
}


def _lost_files(directory: Path) -> list[tuple[Path, dict[str, Any]]]:
    """(content, why) of every lost+found file, with its ``.json`` when it has one."""
    lost_dir = directory / LOST_AND_FOUND
    if not lost_dir.is_dir():
        return []
    found = []
    for path in lost_dir.iterdir():
        if path.name.endswith((".json", ".tmp")) or not path.is_file():
            continue
        try:
            why = json.loads(path.with_name(path.name + ".json").read_text())
        except FileNotFoundError:
            why = _REASON_UNKNOWN
        except (ValueError, OSError):
            continue
        if isinstance(why, dict) and why.get("content", path.name) == path.name:
            found.append((path, why))
    return sorted(found, key=lambda item: item[0])


def list_lost(directory: Path) -> list[Path]:
    """Content files in lost+found (each with a ``<name>.json`` saying why, when that
    could be written)."""
    return [path for path, _ in _lost_files(directory)]


def lost_records(directory: Path) -> list[dict[str, Any]]:
    """What the status file says about each lost+found file."""
    return [
        {
            "file": path.name,
            "path": str(path),
            "doc_id": why.get("doc_id"),
            "filename": _readable_or_none(why.get("filename")),
            # a rendition or an attachment (an upload's record): where it was written
            "target": why.get("target"),
            "major": why.get("major"),
            "minor": why.get("minor"),
            "error": f"{why.get('error_type')}: {why.get('error_message')}",
            "lost": why.get("lost"),
            "size": path.stat().st_size,
        }
        for path, why in _lost_files(directory)
    ]


def _readable_or_none(name: Any) -> str | None:
    return readable(name) if isinstance(name, str) else None


def remove_lost(directory: Path, name: str) -> None:
    """Delete a lost+found file and its ``.json`` (the user has rescued it)."""
    lost_dir = directory / LOST_AND_FOUND
    if durable.safe_filename(name) != name or name.endswith(".json"):
        raise FileNotFoundError(name)
    (lost_dir / name).unlink()
    with contextlib.suppress(FileNotFoundError):
        (lost_dir / f"{name}.json").unlink()
