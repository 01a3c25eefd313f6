"""Sending a draft to the vault while the program is still writing it.

A program that writes a document from its first byte to its last (``cp``, a shell's
``>``, ``rsync --inplace``, ``dd``) makes content that only grows at its end. Once
such content passes ``STREAM_FROM`` bytes, a ``DraftStream`` starts the draft's upload
with what is written so far and keeps sending what follows as it arrives, so that
the upload mostly overlaps the writing and close() waits only for the tail.

The spool file stays the durable copy and the stream is only a faster way of sending
it; nothing else about a check-in changes. The stream reads the bytes back from the
spool file and sends the closing boundary of its body (without which the vault makes
no draft) only when close() asks for it, which the check-in does at the very point
where it would otherwise send the upload (after recording ``uploading``), and only
when what was sent is proved to be the whole content: the same length, the same md5
(hashed on its own from the bytes sent, against the md5 of the bytes written), and
the content still in the same run of appends. Anything else (an overwrite, a
truncation, a failed request, a check-in without an upload) aborts the request
before its closing boundary, and the check-in uploads the file as it always did.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator

import trio

from vaultfs.bridge.write.spool.entry import RunningMd5, SpoolEntry
from vaultfs.client import VaultApi
from vaultfs.errors import InvalidSessionId

__all__ = ["STREAM_FROM", "DraftStream"]

log = logging.getLogger(__name__)

#: Content smaller than this is sent whole at close (most saves): streaming pays off
#: only where the upload takes long enough to overlap the writing.
STREAM_FROM = 8 * 1024 * 1024
#: Bytes read back from the spool file per chunk of the request body
_CHUNK = 1024 * 1024


class StreamAborted(Exception):
    """The stream stopped before its closing boundary: the vault has no draft of it."""


class DraftStream:
    """One draft upload that runs while its entry is being written."""

    def __init__(self, entry: SpoolEntry, client: VaultApi) -> None:
        self.entry = entry
        self._client = client
        #: the run of appends this stream follows; any other change ends it
        self._run = entry.append_run()
        self._sent = 0
        self._md5 = RunningMd5(hashlib.md5(usedforsecurity=False), 0)
        self._more = trio.Event()
        #: (size, md5) of the whole content, once the check-in asks for the end
        self._expected: tuple[int, str] | None = None
        self._aborted: str | None = None
        #: the content's iterator ended: the closing boundary went to the request
        self._complete = False
        self._scope = trio.CancelScope()
        self._done = trio.Event()
        self._version: tuple[int, int] | None = None
        self._error: Exception | None = None

    async def run(self) -> None:
        """Send the request; its outcome waits for ``finish``. Run in a nursery."""
        doc_id = self.entry.doc_id
        log.info("spool: doc %d streaming the draft while it is written", doc_id)
        try:
            with self._scope:
                self._version = await self._client.create_draft_streamed(
                    doc_id, self.entry.record.filename, self._content()
                )
        except Exception as exc:  # handed to finish(), which decides what it means
            self._error = exc
            if not self._complete:
                log.info("spool: doc %d stream stopped (%s); close() uploads the file", doc_id, exc)
        finally:
            self._md5.stop()
            self._done.set()

    def wake(self) -> None:
        """More was written."""
        self._more.set()

    def abort(self, why: str) -> None:
        """End the request without a draft (nothing once the end was asked for)."""
        if self._aborted is None and self._expected is None:
            self._aborted = why
            self._scope.cancel()

    async def finish(self, size: int, md5: str) -> tuple[int, int] | None:
        """Send the rest and end the request if what was sent is the whole content of
        ``size`` bytes and md5 ``md5``: the new draft's (major, minor). None when the
        vault has no draft from this stream (send the file instead). Raises the
        request's failure when it may have arrived (like any upload's)."""
        self._expected = (size, md5)
        self._more.set()
        await self._done.wait()
        if self._version is not None:
            return self._version
        if self._complete and isinstance(self._error, InvalidSessionId):
            return None  # refused before anything was done: the file is sent after a login
        if self._complete and self._error is not None:
            raise self._error
        return None

    async def _content(self) -> AsyncIterator[bytes]:
        while True:
            more = self._more = trio.Event()
            if self._aborted is not None:
                raise StreamAborted(self._aborted)
            size = self.entry.appended(self._run)
            if size is None:
                raise StreamAborted("the content changed other than at its end")
            if self._sent < size:
                data = self.entry.pread(self._sent, min(size - self._sent, _CHUNK))
                if not data:
                    raise StreamAborted("the spool file is shorter than what was written")
                self._md5.append(data)
                self._sent += len(data)
                yield data
            elif self._expected is not None:
                await self._check(*self._expected)
                self._complete = True
                return
            else:
                await more.wait()

    async def _check(self, size: int, md5: str) -> None:
        """Prove that what was sent is the content ``size`` bytes long with ``md5``."""
        if self._sent != size:
            raise StreamAborted(f"sent {self._sent} bytes of {size}")
        sent_md5 = await trio.to_thread.run_sync(self._md5.hexdigest)
        if sent_md5 != md5:
            raise StreamAborted("the bytes sent differ from the bytes written")
        if self.entry.appended(self._run) != size:
            raise StreamAborted("the content changed while it was checked")
