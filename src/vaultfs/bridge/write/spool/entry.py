"""One checked-out document in the spool: its content file, its record, its md5.

Owns the entry's I/O (plain blocking calls on the open file descriptor, as fast as the
page cache; several FUSE handles may share one entry), the md5 kept up to date while
the content only grows, and the marks a failed write leaves. The states an entry
moves through and their table are ``states``'; what moves it is the spool's.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import trio

from vaultfs.bridge.tree.locks import Changes
from vaultfs.bridge.write.spool import store
from vaultfs.bridge.write.spool.states import EntryState

__all__ = ["EDITING", "PENDING", "UNLOCKING", "UPLOADING", "RunningMd5", "SpoolEntry"]

log = logging.getLogger(__name__)

EDITING = EntryState.EDITING
PENDING = EntryState.PENDING
UPLOADING = EntryState.UPLOADING
UNLOCKING = EntryState.UNLOCKING

#: Writes the md5 thread of an entry may lag behind before a writer waits for it
_HASH_BACKLOG = 32


class RunningMd5:
    """The md5 of content that only grows at its end, hashed by a thread of its own a
    few writes behind the writer: a write does not wait for its hashing, which runs
    alongside the next one."""

    def __init__(self, md5: hashlib._Hash, length: int) -> None:
        self._md5 = md5
        #: bytes appended so far (hashed, or queued for the thread)
        self.length = length
        # bounded: a writer faster than the hashing waits rather than filling memory
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=_HASH_BACKLOG)
        self._thread: threading.Thread | None = None

    def append(self, data: bytes) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._hash, name="spool-md5", daemon=True)
            self._thread.start()
        self._queue.put(data)
        self.length += len(data)

    def _hash(self) -> None:
        while (data := self._queue.get()) is not None:
            self._md5.update(data)

    def stop(self) -> None:
        """End the thread once it has hashed what was appended (it starts again on the
        next append); does not wait for that."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread = None

    def hexdigest(self) -> str:
        """The md5 of everything appended so far (blocking until it is hashed)."""
        thread = self._thread
        self.stop()
        if thread is not None:
            thread.join()
        return self._md5.hexdigest()


class SpoolEntry:
    """One checked-out document: its spool file (kept open) and its record.

    The I/O methods are plain blocking calls on the open fd, as fast as the page
    cache; several FUSE handles may share one entry.

    While the content is only ever appended to (a copy made at check-out, then
    sequential writes: ``cp``, a shell's ``>``), the entry keeps the md5 of the
    content up to date as the writes arrive, so a check-in needs no hashing pass over
    the file. Any other change (an overwrite, a hole, a truncation other than to 0)
    gives that up, and the check-in hashes the file as before.
    """

    def __init__(
        self,
        directory: Path,
        record: store.EntryRecord,
        fd: int,
        md5: hashlib._Hash | None = None,
    ) -> None:
        self.doc_id = record.doc_id
        self.path = store.data_path(directory, record.doc_id)
        self.record = record
        self._fd = fd
        #: md5 of the whole content while it is known (None: hash the file); its
        #: ``length`` is then the file's size
        self._md5 = RunningMd5(md5, os.fstat(fd).st_size) if md5 is not None else None
        #: a write and its hash update are one step: writes may come from worker threads
        #: (a file renamed over an open edit is copied in one)
        self._io = threading.Lock()
        #: held while the entry's content or state is being changed by the spool
        self.lock = trio.Lock()
        #: whenever the state or the retry time changes
        self.changed = Changes()
        #: trio clock time before which the worker does not try again
        self.next_attempt = 0.0
        #: failed tries since this process started (drives the backoff)
        self.failures = 0
        #: a worker task is looking after this entry
        self.retrying = False
        #: written or truncated through this process (an entry found on disk may have
        #: been): one that was not holds the vault's content and uploads nothing
        self.modified = md5 is None
        #: when the content last changed through this mount (what stat shows while the
        #: edit is open, and after its check-in: see ``Tree.checked_in``)
        self.mtime_ns = time.time_ns()
        #: the version the check-in made, once it is in the vault
        self.checked_in: tuple[int, int] | None = None

    @property
    def state(self) -> EntryState:
        return self.record.state

    def size(self) -> int:
        return os.fstat(self._fd).st_size

    def pread(self, offset: int, size: int) -> bytes:
        return os.pread(self._fd, size, offset)

    def pwrite(self, offset: int, data: bytes) -> int:
        view = memoryview(data)
        with self._io, self._failing_marks("write"):
            self.modified = True
            self.mtime_ns = time.time_ns()
            written = 0
            while written < len(view):
                written += os.pwrite(self._fd, view[written:], offset + written)
            if self._md5 is not None:
                if offset == self._md5.length:
                    # bytes are immutable: the hashing thread may read them later
                    self._md5.append(data if isinstance(data, bytes) else bytes(data))
                else:
                    self._drop_md5()  # an overwrite or a hole: hash the file at check-in
        return written

    def truncate(self, size: int) -> None:
        with self._io, self._failing_marks("truncate"):
            self.modified = True
            self.mtime_ns = time.time_ns()
            os.ftruncate(self._fd, size)
            if size == 0:  # O_TRUNC, or a replacement: the content starts over
                self._drop_md5()
                self._md5 = RunningMd5(hashlib.md5(usedforsecurity=False), 0)
            elif self._md5 is not None and size != self._md5.length:
                self._drop_md5()

    @contextlib.contextmanager
    def _failing_marks(self, what: str) -> Iterator[None]:
        """A failed write leaves content that is not what the user wrote: mark the
        entry so that it never becomes a version (it goes to lost+found instead)."""
        try:
            yield
        except OSError as exc:
            if self.record.write_failed is None:
                self.record.write_failed = f"{what} failed: {exc.strerror or exc}"
                log.error("spool: doc %d %s", self.doc_id, self.record.write_failed)
            raise

    def _drop_md5(self) -> None:
        if self._md5 is not None:
            self._md5.stop()
            self._md5 = None

    def append_run(self) -> object | None:
        """What names the current run of appends (content that has only grown at its
        end since a check-out or a truncation to 0), None when there is none."""
        return self._md5

    def appended(self, run: object) -> int | None:
        """The content's size while it is still in the run of appends ``run`` (from
        ``append_run``); None once it changed any other way (every byte below that
        size stays as it is while this answers the same ``run``)."""
        with self._io:
            return self._md5.length if self._md5 is not None and self._md5 is run else None

    def md5(self) -> str | None:
        """The content's md5 when it was followed write by write, else None. Blocking
        (the last writes may still be being hashed)."""
        with self._io:
            return self._md5.hexdigest() if self._md5 is not None else None

    def content_md5(self) -> str:
        """The content's md5, hashing the file when it was not followed. Blocking: run
        in a worker thread."""
        return self.md5() or store.md5_of(self.path)

    def fsync(self) -> None:
        # The record is made durable on every write of it, so only content remains.
        os.fsync(self._fd)

    def dup_fd(self) -> int:
        """A descriptor of the content of its own (the caller closes it): an fsync in a
        worker thread through it goes on safely while the entry is closed and removed."""
        return os.dup(self._fd)

    def close(self) -> None:
        with self._io:
            self._drop_md5()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def waits(self) -> bool:
        """Whether it waits for the spool's queue (not while open for writing)."""
        return self.state != EDITING

    def poke(self) -> None:
        self.changed.notify()
