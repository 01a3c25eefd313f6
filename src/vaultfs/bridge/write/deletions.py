"""Documents and versions deleted through the mount: ``rmdir`` of a document's
directory deletes the document, ``rm`` of a version's file deletes that version.

Owns the vault's calls for them and what the tree forgets at once (a deleted document
leaves the index before the next poll). The families (``nodes.documents``,
``nodes.versions``) decide when a removal is a deletion (an empty directory, a
document with more than one version) and what the names overlay hides meanwhile.
"""

from __future__ import annotations

import logging

from vaultfs.bridge.tree.tree import Tree
from vaultfs.client import VaultApi

__all__ = ["Deletions"]

log = logging.getLogger(__name__)


class Deletions:
    def __init__(self, tree: Tree, client: VaultApi) -> None:
        self._tree = tree
        self._client = client

    async def document(self, doc_id: int) -> None:
        """Delete document ``doc_id``; the index forgets it at once."""
        await self._client.delete_document(doc_id)
        log.info("deleted document %d", doc_id)
        self._tree.index.forget(doc_id)

    async def version(self, doc_id: int, major: int, minor: int) -> None:
        """Delete version ``major.minor`` of document ``doc_id`` (not its only one: the
        vault keeps that); the caller reads the document's details again."""
        await self._client.delete_version(doc_id, major, minor)
        log.info("deleted version %d.%d of document %d", major, minor, doc_id)
