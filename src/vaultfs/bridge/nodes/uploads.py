"""What renditions and attachments share: files written into their directories are
uploaded (``write.files_in``), and writing one the vault has replaces it (a rendition)
or adds a version of it (an attachment).

``UploadedFamily`` is the base of ``renditions.Renditions`` and
``attachments.Attachments``: new files in their directories, writing, removing and
emptying.
"""

from __future__ import annotations

import os
from typing import ClassVar

from vaultfs.bridge.fs.attributes import Attr
from vaultfs.bridge.fs.families import Parts, is_writing
from vaultfs.bridge.fs.opening import Opened
from vaultfs.bridge.nodes.family import Family
from vaultfs.bridge.tree.keys import NodeKey

__all__ = ["UploadedFamily"]


class UploadedFamily(Family):
    #: the family's kinds that are directories files are uploaded from
    dir_kinds: ClassVar[frozenset[str]] = frozenset()

    async def directory(
        self, parts: Parts, key: NodeKey, ino: int, version: tuple[int, int] | None = None
    ) -> Attr:
        """A directory of uploaded files (of one ``version``): writable."""
        attributes = parts.attributes
        if version is None:
            times = await attributes.document_times(key.doc_id, directory=True)
        else:
            times = await attributes.document_times(key.doc_id, version=version)
        return attributes.directory(ino, *times, writable=True)

    async def open(self, parts: Parts, key: NodeKey, ino: int, flags: int) -> Opened:
        if not self.is_file(key):
            return await super().open(parts, key, ino, flags)
        if not is_writing(flags):
            # Its content changes only with its document's record or details (a
            # rendition replaced, an attachment's new version), which the index's change
            # brings with an invalidation of the document's inodes, or through a write
            # here, whose open invalidates it: a warm ``grep -r`` shares one open.
            return await parts.opener.vault_content(key, ino, share=True)
        parts.writable()
        # Replaced by what is written (``files_in``).
        truncate = bool(flags & os.O_TRUNC)
        scratch = await parts.write.new_documents.open_uploaded(key, truncate=truncate)
        parts.opener.invalidate_attr(ino)  # its size is the scratch file's now
        return parts.opener.scratch(scratch, flags)

    async def create(self, parts: Parts, parent: NodeKey, name: str, mode: int) -> NodeKey:
        if parent.kind not in self.dir_kinds:
            return await super().create(parts, parent, name, mode)
        await parts.write.new_documents.uploads().check_name(parent, name)
        return parts.overlay.store().create(parent, name, mode).key

    async def unlink(self, parts: Parts, key: NodeKey, name: str) -> None:
        if not self.is_file(key):
            await super().unlink(parts, key, name)
            return
        parts.overlay.deleting()
        await parts.write.new_documents.uploads().delete(key)

    async def rmdir(self, parts: Parts, parent: NodeKey, key: NodeKey, name: str) -> None:
        if self.is_file(key):
            await super().rmdir(parts, parent, key, name)
            return
        parts.overlay.deleting()
        await parts.overlay.hide_empty(key, name)
