"""Renditions: ``renditions/`` of a document's latest version and of each version.

Each rendition is listed as ``<type>.pdf`` (``tree.rendition_filename``); the API
tells no size, so it shows an estimate until its download starts. Writing one replaces
it, a new ``<type>.<ext>`` adds one, ``rm`` deletes it (``uploads``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import cast

from vaultfs.bridge.fs.attributes import Attr
from vaultfs.bridge.fs.families import Parts
from vaultfs.bridge.fs.paths import DisplayPaths
from vaultfs.bridge.nodes.uploads import UploadedFamily
from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.filenames import Sibling, assign_names
from vaultfs.bridge.tree.keys import Kind, NodeKey, RenditionKey
from vaultfs.bridge.tree.tree import Tree, rendition_filename

__all__ = ["Renditions"]


def _listing(renditions: dict[str, str], key_of: Callable[[str], NodeKey]) -> dict[str, NodeKey]:
    rtypes = sorted(renditions)
    names = assign_names([Sibling(rendition_filename(r), r, is_file=True) for r in rtypes])
    return {n: key_of(r) for n, r in zip(names, rtypes, strict=True)}


def _rendition(key: NodeKey) -> RenditionKey:
    return cast(RenditionKey, key)  # the family is given its own keys only


class Renditions(UploadedFamily):
    key_type = RenditionKey
    dir_kinds = frozenset({Kind.RENDS, Kind.VRENDS})

    async def children(self, tree: Tree, key: NodeKey) -> Mapping[str, NodeKey]:
        doc_id = key.doc_id
        if key.kind == Kind.RENDS:
            details = await tree.details(doc_id)
            return _listing(details.renditions, lambda rtype: keys.rendition(doc_id, rtype))
        if key.kind != Kind.VRENDS:
            return await super().children(tree, key)
        await tree.details(doc_id)
        major, minor = _rendition(key).version
        renditions = await tree.version_renditions(doc_id, major, minor)
        return _listing(
            renditions, lambda rtype: keys.version_rendition(doc_id, major, minor, rtype)
        )

    def step(self, paths: DisplayPaths, key: NodeKey) -> tuple[NodeKey, str] | None:
        doc_id = key.doc_id
        if key.kind == Kind.RENDS:
            return keys.document(doc_id), "renditions"
        if key.kind == Kind.VRENDS:
            return keys.version(doc_id, *_rendition(key).version), "renditions"
        parent = _rendition(key).directory
        return parent, paths.listed(parent, key) or rendition_filename(_rendition(key).rtype)

    async def attributes(self, parts: Parts, key: NodeKey, ino: int) -> Attr:
        doc_id = key.doc_id
        version = _rendition(key).of_version
        if not self.is_file(key):
            return await self.directory(parts, key, ino, version)
        mtime, ctime = await parts.attributes.document_times(doc_id, version=version)
        return await parts.attributes.vault_file(key, ino, mtime, ctime, writable=True)
