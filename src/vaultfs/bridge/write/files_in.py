"""Renditions and attachments in: files written into a document's ``renditions/``,
``versions/M.m/renditions/`` and ``attachments/``.

Owns what such a file means: its name (``<rendition type>.<ext>``, a type the
document's type knows, or any name for an attachment; a temporary name is a scratch
file until it is renamed to one of those), what its close uploads (a rendition added
or replaced, an attachment or a new version of it) and what ``rm`` deletes. While it
is written the file is a scratch file (``write.scratch``), also when it replaces a
file the vault has (``shadow``); the close of its last writer hands the content to
the spool (``spool.uploads``), which keeps it durable until the vault has it.
The node families of renditions and attachments (``nodes.uploads``) and
``new_documents`` call this module for those names; users read docs/bridge.md
("Adding renditions and attachments").
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from vaultfs import errors
from vaultfs.bridge.content.blobcache import BlobCache
from vaultfs.bridge.content.sources import Contents
from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.filenames import unescape
from vaultfs.bridge.tree.keys import AttachmentKey, RenditionKey, typed
from vaultfs.bridge.tree.nodes import NodeKey
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.write.scratch import Scratch, ScratchFile, is_temporary_name
from vaultfs.bridge.write.spool.store import SCRATCH_XATTR
from vaultfs.bridge.write.spool.uploads import ATTACHMENT, RENDITION, UploadRecord
from vaultfs.client import VaultApi

if TYPE_CHECKING:
    from vaultfs.bridge.write.spool.uploads import Upload, Uploads

__all__ = ["FilesIn", "show_upload"]

log = logging.getLogger(__name__)


async def show_upload(tree: Tree, record: UploadRecord) -> None:
    """Show what the spool just uploaded: the document's details are read again (one
    call), so the new rendition or attachment is listed at once."""
    tree.invalidate(record.doc_id)
    await tree.reload(record.doc_id)


def _uploaded(key: NodeKey) -> RenditionKey | AttachmentKey:
    """``key`` as a rendition's or an attachment's key (their directories' too)."""
    key = typed(key)
    if not isinstance(key, RenditionKey | AttachmentKey):
        raise errors.InvalidData(f"{key!r} is no rendition or attachment")
    return key


def _unlabel(scratch: ScratchFile) -> None:
    """The content is a spool entry now: a restart must not also rescue the scratch
    copy to lost+found."""
    with contextlib.suppress(OSError):
        os.removexattr(scratch.fd, SCRATCH_XATTR)


class FilesIn:
    def __init__(
        self,
        tree: Tree,
        client: VaultApi,
        blobs: BlobCache,
        contents: Contents,
        uploads: Uploads | None,
    ) -> None:
        self.tree = tree
        self.client = client
        self.blobs = blobs
        self.contents = contents
        self.uploads = uploads

    # --- names ---------------------------------------------------------------------

    async def check_name(self, parent: NodeKey, name: str) -> None:
        """create() or rename() to ``name`` in ``parent`` (an upload directory): a
        rendition must be of a type the vault knows for the document (EINVAL)."""
        if self.uploads is None:
            raise errors.ReadOnly("this mount has no write-back spool")
        if isinstance(_uploaded(parent), RenditionKey) and not is_temporary_name(name):
            await self.rendition_type(parent, name)

    async def rendition_type(self, parent: NodeKey, name: str) -> str:
        """The rendition type a file name in ``renditions/`` stands for."""
        doc_id = parent.doc_id
        rtype = unescape(name).partition(".")[0]
        known = await self._rendition_types(doc_id)
        if rtype not in known:
            refusal = errors.InvalidData(
                f"document {doc_id}: {name!r} is not <rendition type>.<ext> of a rendition "
                f"type of this document's type (known: {', '.join(sorted(known)) or 'none'})"
            )
            log.warning("rendition refused: %s", refusal.message)
            raise refusal
        return rtype

    async def _rendition_types(self, doc_id: int) -> list[str]:
        record = self.tree.record(doc_id)
        type_name = await self.tree.type_api_name(str(record.get("type__v") or ""))
        metadata = await self.tree.catalog.leaf(type_name, None, None)
        return [str(r) for r in metadata.get("renditions") or []]

    async def _name_of(self, key: NodeKey) -> str:
        listing = await self.tree.children(_uploaded(key).directory)
        name = next((n for n, k in listing.items() if k == key), None)
        if name is None:
            raise errors.NotFound(f"{key!r} no longer exists")
        return name

    # --- writing -------------------------------------------------------------------

    async def shadow(self, scratch: Scratch, key: NodeKey, *, truncate: bool) -> ScratchFile:
        """open() for writing of a rendition or attachment the vault has: a scratch file
        under its name, starting from its content (empty for O_TRUNC), which the close
        uploads as the replacement (a rendition) or next version (an attachment)."""
        if self.uploads is None:
            raise errors.ReadOnly("this mount has no write-back spool")
        parent, name = _uploaded(key).directory, await self._name_of(key)
        source: Path | None = None
        if not truncate:
            content = await self.contents.of(key)
            source = await self.blobs.cached_path(content.key, content.fetch)
        shadow = await trio.to_thread.run_sync(scratch.copy_of, parent, name, source, 0o644)
        shadow.dirty = False  # the vault's content: a close without a write sends nothing
        return shadow

    async def spool(self, scratch: ScratchFile, directory: NodeKey) -> Upload | None:
        """Make the content of ``scratch`` (closed by its last writer) a durable spool
        entry of ``directory`` (``renditions/`` or ``attachments/``: the one it was
        written in, or its document's ``attachments/`` for a dropped file); None when
        the vault has that content already (an attachment's latest version). A failure
        leaves nothing in the spool."""
        assert self.uploads is not None
        parent, filename = _uploaded(directory), unescape(scratch.name)
        doc_id = parent.doc_id
        known_md5 = None
        if isinstance(parent, AttachmentKey):
            record = UploadRecord(0, doc_id, ATTACHMENT, filename)
            details = await self.tree.details(doc_id)
            same = [a for a in details.attachments.values() if a.get("filename__v") == filename]
            known_md5 = str(same[0].get("md5checksum__v") or "").lower() if same else None
        else:
            rtype = await self.rendition_type(parent, scratch.name)
            major = minor = None
            if parent.of_version is not None:
                major, minor = parent.of_version
                existing = await self.tree.version_renditions(doc_id, major, minor)
            else:
                existing = (await self.tree.details(doc_id)).renditions
            record = UploadRecord(
                0, doc_id, RENDITION, filename, rtype, major, minor, replace=rtype in existing
            )
        entry = await self.uploads.spool(scratch.path, record, unless_md5=known_md5)
        _unlabel(scratch)
        return entry

    async def send(self, parent: NodeKey, entry: Upload) -> NodeKey | None:
        """Upload a spooled file; returns the vault's node it became. Raises as
        ``Uploads.send`` does (EIO: kept in the spool and retried; a refusal: kept in
        lost+found)."""
        assert self.uploads is not None
        await self.uploads.send(entry)
        return await self._node_of(parent, entry.record)

    async def _node_of(self, parent: NodeKey, record: UploadRecord) -> NodeKey | None:
        doc_id = record.doc_id
        if record.target == ATTACHMENT:
            details = await self.tree.details(doc_id)
            attachments = details.attachments.items()
            ids = [i for i, a in attachments if a.get("filename__v") == record.filename]
            return keys.attachment(doc_id, ids[0]) if ids else None
        assert record.rendition_type is not None
        directory = _uploaded(parent)
        assert isinstance(directory, RenditionKey)
        key = directory.rendition(record.rendition_type)
        return key if key in (await self.tree.children(parent)).values() else None

    # --- deleting ------------------------------------------------------------------

    async def delete(self, key: NodeKey) -> None:
        """``rm`` of a rendition or attachment: deleted in the vault (an attachment
        with all its versions)."""
        file = _uploaded(key)
        doc_id = file.doc_id
        if isinstance(file, AttachmentKey):
            await self.client.delete_attachment(doc_id, file.attachment_id)
            log.info("deleted attachments/%s of document %d", file.attachment_id, doc_id)
        else:
            await self.client.delete_rendition(doc_id, file.rtype, *(file.of_version or ()))
            log.info("deleted renditions/%s of document %d", file.rtype, doc_id)
        self.tree.invalidate(doc_id)
        await self.tree.reload(doc_id)
