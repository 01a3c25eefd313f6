"""Relationships as symbolic links: what ``<doc>/relationships/`` holds and where each
link points.

Owns the relationships the tree shows and the listing of the two directories:

* ``relationships/`` has one directory per relationship type the vault's metadata
  allows for the document's type (``GET /metadata/objects/documents/types/{type}/
  relationships``, cached an hour like other metadata), so ``ln -s`` can make the first
  one of a type, plus one per type that has a relationship of the document;
* ``relationships/<type label>/`` has one link per relationship whose source is the
  document: from any of its versions for types that are not
  ``sourceDocVersionSpecific`` (the local vault does not copy relationships to a new
  version, yet such a relationship is the document's), from its latest version for
  those that are. The same type and target from several versions is one link (the
  newest source version's); removing it deletes them all. Incoming relationships (this
  document as the target) are not shown. A link is named by its target document's name
  (``filenames`` rules) and points, relative to its directory, at the target's document
  directory, or at ``versions/<M.m>`` for a relationship to one version. Targets not in
  the index (unseen, deleted) are left out.

Reading costs no call per document where the vault offers the cross-document listing
(``GET /objects/documents/relationships``, the local vault's extension): one load of
every relationship (a call per 1,000), again only when a document whose relationships
are asked for has changed since (its ``version_modified_date__v``: creating or deleting
a relationship bumps its source version's), which the index poll tells. A vault without
it is asked per version (``GET .../versions/{M}/{m}/relationships``), only when a
document's ``relationships/`` is listed, cached the same way.
"""

from __future__ import annotations

import logging
import posixpath
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Protocol

import trio

from vaultfs import errors
from vaultfs.bridge.tree import keys, nodes
from vaultfs.bridge.tree.filenames import Sibling, assign_names
from vaultfs.bridge.tree.folder_listing import name_in
from vaultfs.bridge.tree.index import DocumentIndex, Record
from vaultfs.bridge.tree.keys import RelationshipKey, typed
from vaultfs.bridge.tree.locks import KeyedLocks
from vaultfs.bridge.tree.nodes import ROOT, Kind, NodeKey
from vaultfs.bridge.tree.walks import WalkShare
from vaultfs.client import VaultApi

__all__ = ["Link", "Relationships", "target_of"]

log = logging.getLogger(__name__)

#: relationship type metadata changes rarely; read it again after this many seconds
_METADATA_TTL = 3600.0
#: records per page of the cross-document listing
_PAGE = 1000
#: what a vault without the cross-document listing answers when asked for it
_NOT_OFFERED = (
    errors.MalformedUrl,
    errors.MethodNotSupported,
    errors.InvalidDocument,
    errors.InvalidData,
)
#: the directory every document has its relationships in
RELATIONSHIPS_DIR = "relationships"


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def target_of(record: Record) -> tuple[int, tuple[int, int] | None] | None:
    """(target document id, target version or None) of a relationship record."""
    target = _int(record.get("target_doc_id__v"))
    if target is None:
        return None
    major = _int(record.get("target_major_version__v"))
    minor = _int(record.get("target_minor_version__v"))
    return target, (major, minor) if major is not None and minor is not None else None


def _source_version(record: Record) -> tuple[int, int]:
    return (
        _int(record.get("source_major_version__v")) or 0,
        _int(record.get("source_minor_version__v")) or 0,
    )


@dataclass
class Link:
    """One link: a relationship of a document (type, target) and every record of it
    (the same from several source versions), newest source version first."""

    relationship_type: str
    target: int
    target_version: tuple[int, int] | None
    records: list[Record]

    @property
    def id(self) -> int:
        return int(self.records[0]["id"])


#: the records of every document without relationships (most of them: kept for none)
_NO_RECORDS: tuple[Record, ...] = ()


def _stamp_of(modified: Any) -> int:
    """What is kept of a document's version_modified_date__v to tell that it changed:
    its hash, not the text (every document of the vault has one once any
    ``relationships/`` is listed: 100,000 strings were 7 MiB)."""
    return hash(modified)


class _Versions(Protocol):
    versions: list[tuple[int, int]]


class TreeView(Protocol):
    """What this module asks of the tree that holds it (``tree.Tree``, passed in: the
    tree imports this module, not the other way round)."""

    index: DocumentIndex
    walks: WalkShare

    def record(self, doc_id: int) -> Record: ...

    async def type_api_name(self, value: str) -> str: ...

    async def details(self, doc_id: int) -> _Versions: ...

    async def children(self, key: NodeKey) -> Mapping[str, NodeKey]: ...


class Relationships:
    def __init__(self, tree: TreeView, client: VaultApi) -> None:
        self._tree = tree
        self._client = client
        #: document id -> the stamp (``_stamp_of``) of the document its relationships
        #: were read for, and its outgoing relationship records where it has any
        self._stamps: dict[int, int] = {}
        self._records: dict[int, Sequence[Record]] = {}
        #: whether the vault offers the cross-document listing (None: not asked yet)
        self.listing_offered: bool | None = None
        self._load_lock = trio.Lock()
        self._doc_locks: KeyedLocks[int] = KeyedLocks()
        #: document type API name -> (when read, relationship type entries)
        self._types: dict[str, tuple[float, list[dict[str, Any]]]] = {}
        self._types_lock = trio.Lock()

    # --- metadata ----------------------------------------------------------------

    async def types_of(self, doc_id: int) -> list[dict[str, Any]]:
        """The relationship types the metadata allows for the document's type (an empty
        list when the vault will not say: the existing ones are listed all the same)."""
        type_value = str(self._tree.record(doc_id).get("type__v") or "")
        if not type_value:
            return []
        type_name = await self._tree.type_api_name(type_value)
        async with self._types_lock:
            cached = self._types.get(type_name)
            if cached is None or time.monotonic() - cached[0] >= _METADATA_TTL:
                try:
                    self._tree.walks.spend(f"the relationship types of {type_name}")
                    types = await self._client.relationship_types(type_name)
                except (errors.InvalidData, errors.MalformedUrl, errors.InvalidDocument) as exc:
                    log.info("no relationship types for %s: %s", type_name, exc)
                    types = []
                cached = self._types[type_name] = (time.monotonic(), types)
            return cached[1]

    async def type_spec(self, doc_id: int, relationship_type: str) -> dict[str, Any] | None:
        for spec in await self.types_of(doc_id):
            if spec.get("value") == relationship_type:
                return spec
        return None

    # --- the records ---------------------------------------------------------------

    def _stamp(self, doc_id: int) -> int:
        return _stamp_of(self._tree.record(doc_id).get("version_modified_date__v"))

    def _kept(self, doc_id: int) -> Sequence[Record] | None:
        """The records kept of ``doc_id`` when they were read for it as it is now."""
        stamp = self._stamps.get(doc_id)
        if stamp is None or stamp != self._stamp(doc_id):
            return None
        return self._records.get(doc_id, _NO_RECORDS)

    def _keep(self, doc_id: int, stamp: int, records: Sequence[Record]) -> None:
        self._stamps[doc_id] = stamp
        if records:
            self._records[doc_id] = records
        else:
            self._records.pop(doc_id, None)

    async def records(self, doc_id: int) -> Sequence[Record]:
        """The relationship records whose source is a version of ``doc_id``."""
        kept = self._kept(doc_id)
        if kept is not None:
            return kept
        if self.listing_offered is not False:
            await self._load_all()
            if self.listing_offered:
                return self._records.get(doc_id, _NO_RECORDS)
        return await self._load_one(doc_id)

    async def _load_all(self) -> None:
        """Read every relationship (pages of 1,000) and stamp every document with its
        record's modification date at the time of the read."""
        async with self._load_lock:
            # The modification dates from the index's column: no record is read.
            stamps = {d: _stamp_of(m) for d, m in self._tree.index.store.stamps()}
            if all(self._stamps.get(d) == stamp for d, stamp in stamps.items()):
                return  # another task loaded while this one waited
            grouped: dict[int, list[Record]] = {}
            start = 0
            try:
                while True:
                    self._tree.walks.spend("the vault's relationships")
                    page = await self._client.list_all_relationships(start=start, limit=_PAGE)
                    for record in page.records:
                        source = _int(record.get("source_doc_id__v"))
                        if source is not None:
                            grouped.setdefault(source, []).append(record)
                    start += len(page.records)
                    if not page.records or start >= page.total:
                        break
            except (*_NOT_OFFERED, ValueError) as exc:
                if self.listing_offered is None:
                    log.info("no cross-document relationship listing (%s): per version", exc)
                    self.listing_offered = False
                    return
                raise
            self.listing_offered = True
            log.debug("read %d relationship(s) of %d document(s)", start, len(grouped))
            self._stamps, self._records = stamps, dict(grouped)

    async def _load_one(self, doc_id: int) -> Sequence[Record]:
        """One document's relationships from the per-version listing (one call per
        version that can hold them)."""
        async with self._doc_locks.hold(doc_id):
            kept = self._kept(doc_id)
            if kept is not None:
                return kept
            stamp = self._stamp(doc_id)
            versions = (await self._tree.details(doc_id)).versions
            records: list[Record] = []
            for major, minor in versions:
                self._tree.walks.spend(f"the relationships of document {doc_id}")
                for record in await self._client.list_relationships(doc_id, major, minor):
                    if _int(record.get("source_doc_id__v")) == doc_id and _source_version(
                        record
                    ) == (major, minor):
                        records.append(record)
            self._keep(doc_id, stamp, records)
            return records

    def learned(self, doc_id: int, records: list[Record]) -> None:
        """This mount changed the document's relationships (and reloaded its record):
        keep what it knows now rather than reading it again."""
        self._keep(doc_id, self._stamp(doc_id), records)

    async def links(self, doc_id: int, relationship_type: str | None = None) -> list[Link]:
        """The document's links (of one type), oldest relationship first."""
        record = self._tree.record(doc_id)
        latest = (
            _int(record.get("major_version_number__v")),
            _int(record.get("minor_version_number__v")),
        )
        specific = {
            str(s.get("value"))
            for s in await self.types_of(doc_id)
            if s.get("sourceDocVersionSpecific")
        }
        groups: dict[tuple[str, int, tuple[int, int] | None], list[Record]] = {}
        for rel in await self.records(doc_id):
            rtype = str(rel.get("relationship_type__v") or "")
            target = target_of(rel)
            if target is None or (relationship_type is not None and rtype != relationship_type):
                continue
            if rtype in specific and _source_version(rel) != latest:
                continue
            groups.setdefault((rtype, *target), []).append(rel)
        result = [
            Link(rtype, target, version, sorted(recs, key=_source_version, reverse=True))
            for (rtype, target, version), recs in groups.items()
        ]
        return sorted(result, key=lambda link: min(int(r["id"]) for r in link.records))

    async def link(self, key: NodeKey) -> Link:
        """The link a node (RLINK) stands for."""
        link_key = typed(key)
        if not isinstance(link_key, RelationshipKey):
            raise errors.NotFound(f"{key!r} is not a relationship")
        doc_id, rel_id = link_key.doc_id, link_key.relationship_id
        for link in await self.links(doc_id):
            if any(int(r["id"]) == rel_id for r in link.records):
                return link
        raise errors.NotFound(f"relationship {rel_id} of document {doc_id} no longer exists")

    # --- listings ----------------------------------------------------------------

    async def type_dirs(self, doc_id: int) -> dict[str, NodeKey]:
        """Name -> node of the document's ``relationships/``: its types' directories."""
        return await self._type_dirs(doc_id)

    async def unlisted_type_dir(self, key: NodeKey, name: str) -> NodeKey | None:
        """The directory ``name`` in ``relationships/`` (``key``) of a type the document
        may have but has no relationship of: not listed, reachable by name for
        ``ln -s``."""
        return (await self._type_dirs(key.doc_id, every_type=True)).get(name)

    async def _type_dirs(self, doc_id: int, *, every_type: bool = False) -> dict[str, NodeKey]:
        """One directory per type the document has a relationship of; with
        ``every_type``, also per type the metadata allows for it. Only the first are
        listed: a walk over the whole vault would meet one empty directory per allowed
        type in every document (six in the demo: 60,000 in 10,000 documents)."""
        allowed = {
            str(s["value"]): str(s.get("label") or s["value"])
            for s in await self.types_of(doc_id)
            if s.get("value")
        }
        links = await self.links(doc_id)
        used = {link.relationship_type for link in links}
        labels = {v: label for v, label in allowed.items() if every_type or v in used}
        for link in links:
            labels.setdefault(link.relationship_type, link.relationship_type)
        values = sorted(labels)
        names = assign_names([Sibling(labels[v], v, (0, v)) for v in values])
        return {n: keys.relationship_type(doc_id, v) for n, v in zip(names, values, strict=True)}

    async def links_listing(self, doc_id: int, relationship_type: str) -> dict[str, NodeKey]:
        """Name -> link of one type's directory of the document."""
        siblings: list[Sibling] = []
        children: list[NodeKey] = []
        for link in await self.links(doc_id, relationship_type):
            target = self._tree.index.get(link.target)
            if target is None:
                log.debug(
                    "relationship %d of document %d: target %d is not in the tree",
                    link.id,
                    doc_id,
                    link.target,
                )
                continue
            tie = str(link.target)
            if link.target_version is not None:
                tie += " v{}.{}".format(*link.target_version)
            siblings.append(Sibling(str(target.get("name__v") or link.target), tie, (0, tie)))
            children.append(keys.relationship_link(doc_id, link.id))
        return dict(zip(assign_names(siblings), children, strict=True))

    # --- paths ---------------------------------------------------------------------

    async def _name_in(self, parent: NodeKey, child: NodeKey) -> str:
        name = name_in(await self._tree.children(parent), child)
        if name is None and parent.kind == Kind.RELS:  # a type with no link yet: unlisted
            every = await self._type_dirs(parent.doc_id, every_type=True)
            name = next((n for n, k in every.items() if k == child), None)
        if name is None:
            raise errors.NotFound(f"{child!r} is not in {parent!r}")
        return name

    async def document_path(self, doc_id: int) -> list[str]:
        """The names from the mount's root to the document's directory."""
        chain: list[NodeKey] = [
            ROOT,
            *nodes.folder_of(self._tree.record(doc_id)),
            keys.document(doc_id),
        ]
        return [await self._name_in(p, c) for p, c in pairwise(chain)]

    async def type_dir_path(self, doc_id: int, relationship_type: str) -> list[str]:
        """The names from the root to ``<doc>/relationships/<type label>``."""
        rels: NodeKey = keys.relationships(doc_id)
        type_name = await self._name_in(rels, keys.relationship_type(doc_id, relationship_type))
        return [*await self.document_path(doc_id), RELATIONSHIPS_DIR, type_name]

    async def link_text(self, key: NodeKey) -> str:
        """What the link reads: its target's directory, relative to the link's."""
        link = await self.link(key)
        if self._tree.index.get(link.target) is None:
            raise errors.NotFound(f"document {link.target} is not in the tree")
        here = await self.type_dir_path(key.doc_id, link.relationship_type)
        there = await self.document_path(link.target)
        if link.target_version is not None:
            there += ["versions", "{}.{}".format(*link.target_version)]
        return posixpath.relpath("/" + "/".join(there), "/" + "/".join(here))

    async def link_stat(self, key: NodeKey) -> tuple[int, str]:
        """(length of the link's text, its relationship's creation date)."""
        link = await self.link(key)
        text = await self.link_text(key)
        return len(text.encode()), str(link.records[-1].get("created_date__v") or "")
