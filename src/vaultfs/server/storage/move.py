"""``serve-admin move-content``: copy every referenced file from one content store to
another (the directory to a bucket, and back), resumable and verified by checksum.

Each file is streamed from the source into the target's ``BlobWriter``, which hashes
what it receives: a file whose sha256 is not its name is reported and not stored. A
file the target holds already with the right size is skipped, so a run that was
interrupted (or that ran while servers were still writing) is simply run again; an
upload cut off half-way left nothing in the target (``content``). ``verify`` reads
back every file of the target and checks its sha256 as well.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .content import ContentStore, ContentUnavailable, WrongContent

__all__ = ["Moved", "move_content"]

_CHUNK = 1024 * 1024


@dataclass
class Moved:
    copied: int = 0
    copied_bytes: int = 0
    #: already in the target (from an earlier run, or the same content)
    present: int = 0
    #: read back from the target and found right (``verify``)
    verified: int = 0
    #: what went wrong, one line per file
    problems: list[str] = field(default_factory=list)


def _sha256_of(store: ContentStore, sha256: str) -> str:
    reading = store.read(sha256)
    digest = hashlib.sha256()
    try:
        while chunk := reading.body.read(_CHUNK):
            digest.update(chunk)
    finally:
        reading.body.close()
    return digest.hexdigest()


def move_content(
    source: ContentStore,
    target: ContentStore,
    wanted: Iterable[str],
    *,
    verify: bool = False,
    progress: Callable[[Moved], None] | None = None,
) -> Moved:
    """Copy the files ``wanted`` (sha256 names) from ``source`` to ``target``
    (blocking); the source is left as it is."""
    moved = Moved()
    for sha256 in sorted(set(wanted)):
        try:
            _move_one(source, target, sha256, verify, moved)
        except (OSError, ContentUnavailable) as exc:
            moved.problems.append(f"{sha256}: {exc}")
        if progress is not None:
            progress(moved)
    return moved


def _move_one(
    source: ContentStore, target: ContentStore, sha256: str, verify: bool, moved: Moved
) -> None:
    size = source.size(sha256)
    if size is None:
        moved.problems.append(f"{sha256}: referenced but missing from {source}")
        return
    if target.size(sha256) == size:
        moved.present += 1
    else:
        reading = source.read(sha256)
        try:
            target.put_stream(reading.body, size, _CHUNK, expect=sha256)
        except WrongContent:
            moved.problems.append(
                f"{sha256}: the source's file does not hold the content its name promises"
            )
            return
        finally:
            reading.body.close()
        moved.copied += 1
        moved.copied_bytes += size
    if verify:
        if _sha256_of(target, sha256) != sha256:
            moved.problems.append(f"{sha256}: the copy in {target} differs from its name")
        else:
            moved.verified += 1
