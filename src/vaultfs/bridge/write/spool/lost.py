"""The spool's lost+found: content the vault will not take, kept and never overwritten.

Owns ``<spool>/lost+found/`` (mode 0700): moving content there with a ``.json``
saying why (``keep_in_lost``, ``move_to_lost``), rescuing a restart's would-be new
documents from the scratch directory (``rescue_scratch``), listing what is there for
the status, and removing a file the user has rescued. Blocking: the spool runs these
in a worker thread.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from vaultfs.bridge.tree.nodes import LOST_AND_FOUND
from vaultfs.bridge.write.spool import creates, store

__all__ = [
    "keep_in_lost",
    "list_lost",
    "lost_records",
    "move_to_lost",
    "remove_lost",
    "rescue_scratch",
]

log = logging.getLogger(__name__)

# Longest name of a lost+found file we make, leaving room for " (NN)" and ".json"
# within the 255 bytes a POSIX file name may have.
_MAX_LOST_NAME = 200


def _lost_name(label: str, filename: str, n: int) -> str:
    # The file name comes from the vault: keep it inside lost+found and within limits.
    safe = store.safe_filename(filename)
    stem, dot, ext = safe.rpartition(".")
    if not stem:  # no extension, or a name like ".bashrc"
        stem, dot, ext = safe, "", ""
    if n > 1:
        stem = f"{stem} ({n})"
    name = f"{label}-{stem}{dot}{ext}"
    raw = name.encode()
    if len(raw) > _MAX_LOST_NAME:
        name = raw[:_MAX_LOST_NAME].decode(errors="ignore")
    return name


def keep_in_lost(
    directory: Path, source: Path, label: str, filename: str, why: dict[str, Any]
) -> Path:
    """Move the file ``source`` to lost+found as ``<label>-<filename>``, with a ``.json``
    holding ``why``.

    Never overwrites: a taken name gets `` (2)``, `` (3)``... before its extension.
    Returns the content's new path. Blocking: run in a worker thread.
    """
    lost_dir = directory / LOST_AND_FOUND
    store.ensure_private_dir(lost_dir)
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
    os.chmod(target, store.FILE_MODE)
    try:
        store.write_json_atomically(why_path, {**why, "content": target.name})
    except OSError as exc:
        # A full disk: the content is kept all the same (a link took no space), and
        # the reason goes to the log; the status lists the file without it.
        log.error("lost+found: %s kept, but its reason %s could not be written: %s",
                  target.name, why, exc)  # fmt: skip
        with contextlib.suppress(OSError):
            why_path.with_name(why_path.name + ".tmp").unlink()
    source.unlink()
    store.fsync_dir(source.parent)
    return target


def rescue_scratch(directory: Path) -> list[Path]:
    """Move the files an earlier daemon was writing as new documents, and that it
    never got to create, to lost+found; returns where they went. Everything else in
    the scratch directory is editors' temporary files, left for the mount to clear.
    Blocking."""
    rescued: list[Path] = []
    scratch_dir = directory / store.SCRATCH
    if not scratch_dir.is_dir():
        return rescued
    in_flight = creates.contents_in_flight(directory)
    for path in sorted(scratch_dir.iterdir()):
        try:
            if path.stat().st_ino in in_flight:
                continue  # closed and recorded as a create: ``creates.replay`` settles it
            meta = json.loads(os.getxattr(path, store.SCRATCH_XATTR))
            upload = bool(meta.get("upload"))
            wanted = (bool(meta["new_document"]) or upload) and path.stat().st_size > 0
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if wanted:
            why = {
                "doc_id": None,
                "filename": str(meta.get("name")),
                "error_type": "DAEMON_STOPPED",
                "error_message": ("a rendition or attachment" if upload else "a new document")
                + " being written when the daemon stopped",
                "lost": time.time(),
            }
            target = keep_in_lost(directory, path, "new", str(meta.get("name")), why)
            log.warning("spool: new file %r from before a restart kept in %s", meta["name"], target)
            rescued.append(target)
    return rescued


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
            "filename": why.get("filename"),
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


def remove_lost(directory: Path, name: str) -> None:
    """Delete a lost+found file and its ``.json`` (the user has rescued it)."""
    lost_dir = directory / LOST_AND_FOUND
    if store.safe_filename(name) != name or name.endswith(".json"):
        raise FileNotFoundError(name)
    (lost_dir / name).unlink()
    with contextlib.suppress(FileNotFoundError):
        (lost_dir / f"{name}.json").unlink()
