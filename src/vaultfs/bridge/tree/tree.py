"""The shape of the tree: which nodes exist, their names, and what they stand for.

Owns the directory listings (name -> node key; the keys are ``nodes``') computed from
the document index and the type metadata (folders rebuilt once per index generation),
and the per-document details (versions, renditions, attachments)
and per-version records, fetched lazily and cached until the index sees the
document change. Names come from ``filenames.assign_names``; nothing here does I/O on
disk. What a document's ``relationships/`` holds is ``relationships``' (``self.relationships``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from cachetools import LRUCache

from vaultfs import errors
from vaultfs.bridge.tree import nodes
from vaultfs.bridge.tree.catalog import TypeCatalog
from vaultfs.bridge.tree.filenames import Sibling, assign_names
from vaultfs.bridge.tree.folder_listing import FolderListing
from vaultfs.bridge.tree.index import DocumentIndex, Record
from vaultfs.bridge.tree.index_store import Folder, Times
from vaultfs.bridge.tree.keys import FolderKey, typed
from vaultfs.bridge.tree.listing_cache import ListingCache
from vaultfs.bridge.tree.locks import KeyedLocks
from vaultfs.bridge.tree.nodes import (
    ROOT,
    Kind,
    NodeKey,
    folder_of,
)
from vaultfs.bridge.tree.relationships import Relationships
from vaultfs.bridge.tree.versions import latest_version, parse_version
from vaultfs.bridge.tree.walks import WalkShare
from vaultfs.client import Reachability, VaultApi
from vaultfs.wire import format_datetime

__all__ = [
    "Details",
    "Lister",
    "Tree",
    "rendition_filename",
]

log = logging.getLogger(__name__)

#: documents whose details (and older versions' records) are kept in memory
_KEPT_DETAILS = 16384

#: how API names end (``promotional_piece__c``); labels do not
_API_NAME = re.compile(r"__(v|c|vs|sys)$")


def rendition_filename(rtype: str) -> str:
    """Renditions are listed without a format: viewable ones (and, in practice, most
    others) are PDF, so every rendition file is named ``<type>.pdf``."""
    return f"{rtype}.pdf"


def _index_folder(key: NodeKey) -> Folder:
    """The index's (type, subtype, classification) of folder ``key``, "" for a level it
    does not have."""
    folder = typed(key)
    labels = folder.labels if isinstance(folder, FolderKey) else ()
    type_label, subtype, classification = (*labels, "", "", "")[:3]
    return (type_label, subtype, classification)


@dataclass(slots=True)
class Details:
    """What ``get_document`` (plus the attachment list) tells about one document."""

    #: version_modified_date__v of the record the details were fetched for
    stamp: str | None
    versions: list[tuple[int, int]]
    renditions: dict[str, str]
    attachments: dict[int, Record]
    version_renditions: dict[tuple[int, int], dict[str, str]] = field(default_factory=dict)


@dataclass
class _Folder:
    """One folder of the type hierarchy: its child folders (its documents are read
    from the index, ``FolderListing``)."""

    folders: set[NodeKey] = field(default_factory=set)
    mtime: str = ""


class Lister(Protocol):
    """Who makes the listings: the node families (``nodes.registry.Registry``)."""

    #: names at the root that listings leave out, and the nodes they lead to
    root_names: Mapping[str, NodeKey]
    #: names at the root listed after the vault's folders and documents
    root_listed: Mapping[str, NodeKey]

    def is_local(self, key: NodeKey) -> bool: ...

    async def children(self, tree: Tree, key: NodeKey) -> Mapping[str, NodeKey]: ...

    async def unlisted(self, tree: Tree, key: NodeKey, name: str) -> NodeKey | None: ...


class Tree:
    def __init__(
        self,
        client: VaultApi,
        index: DocumentIndex,
        catalog: TypeCatalog,
        lister: Lister,
        walks: WalkShare | None = None,
    ) -> None:
        self._client = client
        self.index = index
        #: what the calls only a walk needs may spend (asked before each)
        self.walks = walks if walks is not None else WalkShare()
        self._lister = lister
        self.catalog = catalog
        # Bounded, as the listings are: a walk of a million documents reads the
        # details of each, and a detail that went is one call to read again.
        self._details: LRUCache[int, Details] = LRUCache(maxsize=_KEPT_DETAILS)
        self._details_locks: KeyedLocks[int] = KeyedLocks()
        self._versions: LRUCache[tuple[int, int, int], Record] = LRUCache(maxsize=_KEPT_DETAILS)
        #: doc id -> its versions in ``_versions`` (some may have gone from there)
        self._version_keys: dict[int, set[tuple[int, int, int]]] = {}
        self._folders: dict[NodeKey, _Folder] = {}
        self._folders_generation = -1
        #: directory key -> its listing, per index generation
        self._listings = ListingCache()
        index.on_change.append(self.invalidate)
        index.on_relist.append(self._listings.drop_document)
        self.relationships = Relationships(self, client)
        #: doc id -> (md5, mtime) of the content this mount last checked in, or had when
        #: it checked the document out for an editor (``keep_mtime``): shown as the
        #: file's mtime while the vault's latest is that content (the vault's
        #: modification time moves with locks and fields, and an editor would take
        #: that for someone else's change to the file it just saved or opened)
        self._saved: dict[int, tuple[str, int]] = {}

    def invalidate(self, doc_id: int) -> None:
        """The index saw ``doc_id`` change or leave: drop what was cached about it."""
        self._details.pop(doc_id, None)
        for version in self._version_keys.pop(doc_id, ()):
            self._versions.pop(version, None)
        self._listings.drop_document(doc_id)

    # --- records -----------------------------------------------------------------

    def record(self, doc_id: int) -> Record:
        record = self.index.get(doc_id)
        if record is None:
            raise errors.InvalidDocument(f"document {doc_id} is not in the index")
        return record

    def times(self, doc_id: int) -> Times:
        """(modified, version created, document created) of ``doc_id`` in nanoseconds."""
        times = self.index.documents.times(doc_id)
        if times is None:
            raise errors.InvalidDocument(f"document {doc_id} is not in the index")
        return times

    def times_of(self, doc_ids: list[int]) -> list[Times | None]:
        """``times`` of each of ``doc_ids`` (None: not in the index), read together."""
        return self.index.documents.times_of(doc_ids)

    def has_details(self, doc_id: int) -> bool:
        """Whether ``details(doc_id)`` would answer without a call."""
        record = self.index.get(doc_id)
        cached = self._details.get(doc_id)
        return (
            record is not None
            and cached is not None
            and cached.stamp == record.get("version_modified_date__v")
        )

    async def details(self, doc_id: int) -> Details:
        """The document's versions, renditions and attachments (1-2 calls, then cached)."""
        record = self.record(doc_id)
        stamp = record.get("version_modified_date__v")
        cached = self._details.get(doc_id)
        if cached is not None and cached.stamp == stamp:
            return cached
        what = f"the details of document {doc_id}"
        self.walks.check(what)  # a walk past its share: refused before anything waits
        async with self._details_locks.hold(doc_id):
            cached = self._details.get(doc_id)
            if cached is not None and cached.stamp == stamp:
                return cached
            self.walks.spend(what)
            try:
                response = await self._client.get_document(doc_id)
            except errors.InvalidDocument:
                self.index.forget(doc_id)
                raise
            details = await self._parse_details(doc_id, stamp, response)
            self._details[doc_id] = details
            return details

    async def reload(self, doc_id: int) -> Record:
        """Read a document the bridge just changed (one call) into the index and the
        details cache, so the tree shows the change at once."""
        try:
            response = await self._client.get_document(doc_id)
        except errors.InvalidDocument:
            self.index.forget(doc_id)
            raise
        record: Record = response.get("document") or {}
        self.index.put(record, own=True)
        stamp = record.get("version_modified_date__v")
        self._details[doc_id] = await self._parse_details(doc_id, stamp, response)
        return record

    def checked_in(
        self,
        doc_id: int,
        version: tuple[int, int] | None,
        md5: str | None,
        size: int,
        mtime_ns: int,
        *,
        locked: bool = False,
    ) -> None:
        """Show a check-in this mount just finished without reading the document again:
        unlocked (unless an editor's lock file keeps it ``locked``), and with ``version``
        (None: nothing was uploaded) as the latest, of checksum ``md5``. The next poll
        brings the vault's own record."""
        old = self.index.get(doc_id)
        if old is None:
            return
        record = {**old, "locked__v": locked}
        stamp = format_datetime(datetime.now(UTC))
        record["version_modified_date__v"] = stamp
        if version is not None:
            record.update(
                {
                    "major_version_number__v": version[0],
                    "minor_version_number__v": version[1],
                    "version_id": f"{doc_id}_{version[0]}_{version[1]}",
                    "md5checksum__v": md5,
                    "size__v": -(-size // 1024),  # documented in KB
                    "version_creation_date__v": stamp,
                }
            )
        if md5:
            self._saved[doc_id] = (md5.lower(), mtime_ns)
        self.index.put(record, own=True)

    def keep_mtime(self, doc_id: int) -> None:
        """This mount is about to check ``doc_id`` out for an editor: its file keeps the
        mtime it shows now while the vault's latest is this content. The check-out moves
        the vault's modification time, and the editor, which read the file's time when
        it opened it, would take the new one for someone else's change (LibreOffice then
        asks before it saves, or refuses to)."""
        record = self.index.get(doc_id)
        times = self.index.documents.times(doc_id)
        md5 = str((record or {}).get("md5checksum__v") or "").lower()
        if record is None or times is None or not md5:
            return
        if self.saved_mtime(doc_id, record) is None:
            self._saved[doc_id] = (md5, times[0])

    def saved_mtime(self, doc_id: int, record: Record) -> int | None:
        """The mtime of this mount's last save of the document while ``record`` still
        holds that content, else None."""
        saved = self._saved.get(doc_id)
        if saved is None:
            return None
        saved_md5, mtime_ns = saved
        return mtime_ns if saved_md5 == str(record.get("md5checksum__v") or "").lower() else None

    async def _parse_details(self, doc_id: int, stamp: Any, response: dict[str, Any]) -> Details:
        versions = sorted(
            v
            for v in (
                parse_version(str(e.get("number", ""))) for e in response.get("versions") or []
            )
            if v is not None
        )
        renditions = response.get("renditions") or {}
        if not isinstance(renditions, dict):
            renditions = {}
        attachments: dict[int, Record] = {}
        refs = [a for a in response.get("attachments") or [] if isinstance(a, dict)]
        if refs and not all("filename__v" in a for a in refs):
            # get_document names attachments by id only: one more call for their files.
            self.walks.spend(f"the attachments of document {doc_id}")
            refs = await self._client.list_attachments(doc_id)
        for attachment in refs:
            try:
                attachments[int(attachment["id"])] = attachment
            except (KeyError, TypeError, ValueError):
                continue
        return Details(stamp, versions, dict(renditions), attachments)

    async def version_record(self, doc_id: int, major: int, minor: int) -> Record:
        """One version's fields (``get_version``, cached; the latest from the index)."""
        record = self.record(doc_id)
        if latest_version(record) == (major, minor):
            return record
        key = (doc_id, major, minor)
        cached = self._versions.get(key)
        if cached is None:
            self.walks.spend(f"version {major}.{minor} of document {doc_id}")
            response = await self._client.get_version(doc_id, major, minor)
            cached = response.get("document") or {}
            self._versions[key] = cached
            self._version_keys.setdefault(doc_id, set()).add(key)
            renditions = response.get("renditions")
            details = self._details.get(doc_id)
            if isinstance(renditions, dict) and details is not None:
                # The version response lists its renditions: no separate call for them.
                details.version_renditions[(major, minor)] = dict(renditions)
        return cached

    async def version_renditions(self, doc_id: int, major: int, minor: int) -> dict[str, str]:
        details = await self.details(doc_id)
        if (major, minor) == latest_version(self.record(doc_id)):
            return details.renditions
        cached = details.version_renditions.get((major, minor))
        if cached is None:
            await self.version_record(doc_id, major, minor)
            cached = details.version_renditions.get((major, minor))
        if cached is None:
            self.walks.spend(f"the renditions of version {major}.{minor} of document {doc_id}")
            cached = await self._client.list_renditions(doc_id, major, minor)
            details.version_renditions[(major, minor)] = cached
        return cached

    # --- listings ----------------------------------------------------------------

    def _ensure_folders(self) -> None:
        if self._folders_generation == self.index.generation:
            return
        folders: dict[NodeKey, _Folder] = {ROOT: _Folder()}
        for type_, subtype, classification, mtime in self.index.store.folders():
            parent: NodeKey = ROOT
            chain = {"type__v": type_, "subtype__v": subtype, "classification__v": classification}
            for key in folder_of(chain):
                folders[parent].folders.add(key)
                folders[parent].mtime = max(folders[parent].mtime, mtime)
                parent = key
                folders.setdefault(key, _Folder())
            folders[parent].mtime = max(folders[parent].mtime, mtime)
        self._folders = folders
        self._folders_generation = self.index.generation

    def folder_mtime(self, key: NodeKey) -> str:
        self._ensure_folders()
        folder = self._folders.get(key)
        return folder.mtime if folder else ""

    def folder_exists(self, key: NodeKey) -> bool:
        self._ensure_folders()
        return key in self._folders

    async def lookup(self, key: NodeKey, name: str) -> NodeKey | None:
        """The child ``name`` of directory ``key``: listed, or reachable by name only
        (``.vaultfs`` at the root, which listings leave out so that ``tar``, ``rsync``
        and ``grep -r`` of the mount never meet its ever-changing status file)."""
        unlisted = await self._lister.unlisted(self, key, name)
        if unlisted is not None:
            return unlisted
        return (await self.children(key)).get(name)

    def listed_name(self, parent: NodeKey, child: NodeKey) -> str | None:
        """The name ``child`` had in the last listing of ``parent`` made, None when
        ``parent`` was not listed or did not hold it. Never lists: for display (a
        status, a log line), where a name one index generation old is good enough."""
        return self._listings.name_of(parent, child)

    def where_listed(self, child: NodeKey, parent_kind: Kind) -> tuple[NodeKey, str] | None:
        """(parent, name) of ``child`` in a listing made of one of its document's
        directories of ``parent_kind`` (a relationship link: its type directory is
        not in its key). Never lists."""
        doc_id = typed(child).doc_id
        for parent in map(typed, self._listings.directories()):
            if parent.kind == parent_kind and parent.doc_id == doc_id:
                name = next((n for n, k in self._listings.entries(parent) if k == child), None)
                if name is not None:
                    return parent, name
        return None

    async def children(self, key: NodeKey) -> Mapping[str, NodeKey]:
        """Name -> child key of directory ``key`` (made by its family, ``Lister``;
        cached per index generation, except the mount's own nodes' listings and an
        answer's, which its family keeps)."""
        cached = self._listings.get(key, self.index.generation)
        if cached is not None:
            return cached
        listing = await self._lister.children(self, key)
        if not (self._lister.is_local(key) or typed(key).is_answer):
            self._listings.put(key, self.index.generation, listing)
        return listing

    async def list_folder(self, key: NodeKey) -> Mapping[str, NodeKey]:
        """A folder's listing: the root's types and the families' entries (a dict), a
        folder's child folders and documents (a ``FolderListing``, read from the index
        as it is asked for: a folder of a million documents is never held whole)."""
        self._ensure_folders()
        folder = self._folders.get(key)
        if folder is None:
            raise errors.InvalidDocument(f"folder {key!r} no longer exists")
        children = sorted(folder.folders, key=repr)
        labels = await self._folder_labels(key, [str(c[-1]) for c in children])
        labelled = [(labels.get(str(c[-1]), str(c[-1])), c) for c in children]
        if key != ROOT:
            return FolderListing(self.index.store, _index_folder(key), labelled)
        siblings = [Sibling(label, str(c[-1]), (0, str(c[-1]))) for label, c in labelled]
        names = assign_names(siblings, reserved=set(self._lister.root_names))
        listing: dict[str, NodeKey] = dict(zip(names, children, strict=True))
        # The vault's names win: a type labelled like a family's entry keeps its name
        # (paths of documents never move), the entry is told apart by its kind.
        for name, child in self._lister.root_listed.items():
            listing[f"{name} [{child.kind}]" if name in listing else name] = child
        return listing

    @property
    def reach(self) -> Reachability:
        """Whether the vault can be reached now (offline: what needs it fails at once)."""
        return self._client.reach

    def documents_below(self, folder: NodeKey) -> list[int]:
        """The documents in folder ``folder`` or below it (the root: every document),
        smallest id first, from the index alone."""
        key = typed(folder)
        if not isinstance(key, FolderKey):
            raise ValueError(f"{key!r} is not a folder of the type hierarchy")
        return self.index.store.ids_below(key.labels)

    def documents_named(self, folder: NodeKey, name: str) -> list[int]:
        """The documents of ``folder`` whose name is ``name``, smallest id first."""
        return self.index.store.named(_index_folder(folder), name)

    async def _folder_labels(self, key: NodeKey, children: list[str]) -> dict[str, str]:
        """API name -> label for the child folders of ``key`` that are named by API name.

        Records usually carry labels already (``type__v: "Clinical"``): then no metadata
        call is made. A failing metadata call leaves the API names as they are.
        """
        folder = typed(key)
        if not isinstance(folder, FolderKey) or not any(_API_NAME.search(n) for n in children):
            return {}
        try:
            if not folder.labels:  # the root: its folders are the types
                return await self.catalog.type_labels()
            type_label, *below = folder.labels
            type_name = await self.type_api_name(type_label)
            if not below:  # a type's folder: its subtypes
                return await self.catalog.subtype_labels(type_name)
            if len(below) == 1:  # a subtype's: its classifications
                return await self.catalog.classification_labels(type_name, below[0])
        except (errors.InvalidData, errors.MalformedUrl, errors.InvalidDocument) as exc:
            log.info("no labels for the folders in %s: %s", nodes.folder_path(key), exc)
        return {}

    async def type_api_name(self, value: str) -> str:
        if _API_NAME.search(value):
            return value
        labels = await self.catalog.type_labels()
        return next((name for name, label in labels.items() if label == value), value)
