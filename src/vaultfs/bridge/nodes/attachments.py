"""Attachments: a document's ``attachments/`` and its files.

Each attachment is listed by its file name (``filenames`` rules) and dated by its
creation; writing one adds a version of it, a new name adds one, ``rm`` deletes it
(``uploads``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from vaultfs import errors
from vaultfs.bridge.fs.attributes import Attr, ns
from vaultfs.bridge.fs.families import Parts
from vaultfs.bridge.fs.paths import DisplayPaths
from vaultfs.bridge.nodes.uploads import UploadedFamily
from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.filenames import Sibling, assign_names
from vaultfs.bridge.tree.keys import AttachmentKey, Kind, NodeKey
from vaultfs.bridge.tree.tree import Tree

__all__ = ["Attachments"]


def _attachment_id(key: NodeKey) -> int:
    return cast(AttachmentKey, key).attachment_id  # the family is given its own keys only


class Attachments(UploadedFamily):
    key_type = AttachmentKey
    dir_kinds = frozenset({Kind.ATTS})

    async def children(self, tree: Tree, key: NodeKey) -> Mapping[str, NodeKey]:
        if key.kind != Kind.ATTS:
            return await super().children(tree, key)
        doc_id = key.doc_id
        attachments = (await tree.details(doc_id)).attachments
        ids = sorted(attachments)
        names = assign_names(
            [
                Sibling(str(attachments[i].get("filename__v") or i), str(i), (i, ""), is_file=True)
                for i in ids
            ]
        )
        return {n: keys.attachment(doc_id, i) for n, i in zip(names, ids, strict=True)}

    def step(self, paths: DisplayPaths, key: NodeKey) -> tuple[NodeKey, str] | None:
        parent = keys.attachments(key.doc_id)
        if key.kind == Kind.ATTS:
            return keys.document(key.doc_id), "attachments"
        return parent, paths.listed(parent, key) or str(_attachment_id(key))

    async def attributes(self, parts: Parts, key: NodeKey, ino: int) -> Attr:
        if key.kind == Kind.ATTS:
            return await self.directory(parts, key, ino)
        doc_id = key.doc_id
        mtime, ctime = await parts.attributes.document_times(doc_id)
        attachment = (await parts.tree.details(doc_id)).attachments.get(_attachment_id(key))
        if attachment is None:
            raise errors.NotFound("attachment no longer exists")
        ctime = mtime = ns(attachment.get("created_date__v")) or mtime
        return await parts.attributes.vault_file(key, ino, mtime, ctime, writable=True)
