"""Inode numbers of the tree: one per node key, with the kernel's lookup counts.

A node key (``tree.nodes``) names a node of the tree. A key keeps its inode number
while the kernel holds a reference (lookup count above zero); the number is freed when
the kernel forgets the last reference, never on unlink, so an open file keeps working
after its document leaves the tree.

Two ranges of numbers. A document's own nodes (its directory, its four
sub-directories, its source file and ``.events.jsonl``) are numbered from its id, in a
block of eight above ``_DOCUMENTS``: the number is the node's for the whole mount, and
the table keeps only which of them are numbered, one small int per document, rather
than two dict entries and a key per node (a walk holds five nodes of each document it
enters: 200,000 nodes cost 40 MiB of dicts kept one by one). Every other node is
counted out one by one below that, and its number is never reused within one mount, so
a stale kernel reference can never reach a different node; a document node's number
stands for the same node each time it is given.
"""

from __future__ import annotations

from collections.abc import Callable

from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.nodes import Kind, NodeKey

__all__ = ["DOCUMENT_DIRS", "ROOT_INODE", "InodeTable"]

#: FUSE's root inode number
ROOT_INODE = 1

#: a document's own nodes, by their place in its block (``keys``' constructors)
_MEMBERS: tuple[tuple[str, Callable[[int], NodeKey]], ...] = (
    (Kind.DOC, keys.document),
    (Kind.VERS, keys.versions),
    (Kind.RENDS, keys.renditions),
    (Kind.ATTS, keys.attachments),
    (Kind.RELS, keys.relationships),
    (Kind.SRC, keys.source),
    (Kind.EVENTS, keys.events),
)
_PLACE: dict[str, int] = {kind: place for place, (kind, _) in enumerate(_MEMBERS)}
_BLOCK = 8
#: the first number of the documents' blocks, above any number counted out one by one
_DOCUMENTS = 1 << 40
#: the highest document id numbered from its id (a larger one is counted out): the
#: blocks end below 2**61, under the stand-ins' numbers (``daemon.name_events``, 2**62)
_MAX_DOC_ID = ((1 << 61) - _DOCUMENTS) // _BLOCK - 1
#: the numbers of documents' directories: (first, step), one in each block
DOCUMENT_DIRS = (_DOCUMENTS + _PLACE[Kind.DOC], _BLOCK)


def _member(key: NodeKey) -> tuple[int, int] | None:
    """(document id, place in its block) of a document's own node, else None."""
    key = keys.typed(key)
    if not key.OF_DOCUMENT or len(key) != 2:
        return None
    place = _PLACE.get(key.kind)
    if place is None or not 0 <= key.doc_id <= _MAX_DOC_ID:
        return None
    return key.doc_id, place


def _number(doc_id: int, place: int) -> int:
    """The inode number of a document's own node."""
    return _DOCUMENTS + doc_id * _BLOCK + place


def _place(ino: int) -> tuple[int, int]:
    """(document id, place in its block) of a number at or above ``_DOCUMENTS``."""
    return divmod(ino - _DOCUMENTS, _BLOCK)


class InodeTable:
    def __init__(self, root_key: NodeKey) -> None:
        self._next = ROOT_INODE + 1
        self._by_key: dict[NodeKey, int] = {root_key: ROOT_INODE}
        self._by_inode: dict[int, NodeKey] = {ROOT_INODE: root_key}
        #: document id -> the places of its block that are numbered (bit ``place``)
        self._members: dict[int, int] = {}
        self._numbered_members = 0
        #: lookup counts other than 1 of the numbered inodes (0: numbered, not held).
        #: After a walk nearly every inode is held once: keeping only the other counts
        #: saves a dict entry per inode.
        self._counts: dict[int, int] = {ROOT_INODE: 0}
        #: inodes numbered for the mount's life, as the root's (``pin``)
        self._pinned: set[int] = {ROOT_INODE}
        #: the most inodes numbered at once (the kernel forgets names it is told to
        #: only between requests: a walk may hold more than ``max_inodes`` for a while)
        self.peak = 1

    def __len__(self) -> int:
        return len(self._by_inode) + self._numbered_members

    def inode(self, key: NodeKey) -> int:
        """The inode of ``key``, allocating one when it has none (no reference taken)."""
        member = _member(key)
        if member is not None:
            doc_id, place = member
            ino = _number(doc_id, place)
            numbered = self._members.get(doc_id, 0)
            if not numbered >> place & 1:
                self._members[doc_id] = numbered | 1 << place
                self._numbered_members += 1
                self._counts[ino] = 0
                self._grew()
            return ino
        counted = self._by_key.get(key)
        if counted is None:
            counted = self._next
            self._next += 1
            self._by_key[key] = counted
            self._by_inode[counted] = key
            self._counts[counted] = 0
            self._grew()
        return counted

    def _grew(self) -> None:
        numbered = len(self._by_inode) + self._numbered_members
        if numbered > self.peak:
            self.peak = numbered

    def pin(self, key: NodeKey) -> int:
        """The inode of ``key``, never freed: the kernel may be handed references to
        it that this table does not count (pyfuse3's ``shared_entries``), so its
        FORGETs may add up to more than its lookups."""
        ino = self.inode(key)
        self._pinned.add(ino)
        return ino

    def lookup(self, key: NodeKey) -> int:
        """The inode of ``key``, counting one kernel reference to it."""
        ino = self.inode(key)
        # (numbered now: its count is ``_counts``' or 1, as ``lookups`` says)
        self._count(ino, self._counts.get(ino, 1) + 1)
        return ino

    def known(self, key: NodeKey) -> int | None:
        """The inode of ``key`` when it has one (held or not), else None; allocates none."""
        member = _member(key)
        if member is None:
            return self._by_key.get(key)
        doc_id, place = member
        if self._members.get(doc_id, 0) >> place & 1:
            return _number(doc_id, place)
        return None

    def held(self, key: NodeKey) -> int | None:
        """The inode of ``key`` when the kernel holds a reference to it, else None."""
        ino = self.known(key)
        return ino if ino is not None and self.lookups(ino) > 0 else None

    def key(self, ino: int) -> NodeKey | None:
        """The node an inode stands for, None when it was freed (or never existed)."""
        if ino < _DOCUMENTS:
            return self._by_inode.get(ino)
        doc_id, place = _place(ino)
        if place < len(_MEMBERS) and self._members.get(doc_id, 0) >> place & 1:
            return _MEMBERS[place][1](doc_id)
        return None

    def document_nodes(self, doc_id: int) -> list[int]:
        """The inodes of the document's own nodes the kernel holds (``_MEMBERS``)."""
        numbered = self._members.get(doc_id, 0)
        return [
            _number(doc_id, place)
            for place in range(len(_MEMBERS))
            if numbered >> place & 1 and self._counts.get(_number(doc_id, place), 1) > 0
        ]

    @staticmethod
    def of_document(ino: int) -> bool:
        """Whether ``ino`` is one of a document's own nodes (``document_nodes`` has it)."""
        return ino >= _DOCUMENTS

    def _numbered(self, ino: int) -> bool:
        if ino < _DOCUMENTS:
            return ino in self._by_inode
        doc_id, place = _place(ino)
        return bool(self._members.get(doc_id, 0) >> place & 1)

    def lookups(self, ino: int) -> int:
        if not self._numbered(ino):
            return 0
        return self._counts.get(ino, 1)

    def _count(self, ino: int, count: int) -> None:
        if count == 1:
            self._counts.pop(ino, None)
        else:
            self._counts[ino] = count

    def forget(self, ino: int, nlookup: int) -> None:
        """Drop ``nlookup`` kernel references; free the number when none are left."""
        left = self.lookups(ino) - nlookup
        if left > 0:
            self._count(ino, left)
            return
        if ino in self._pinned:
            self._counts[ino] = 0
            return
        self._counts.pop(ino, None)
        if ino >= _DOCUMENTS:
            doc_id, place = _place(ino)
            numbered = self._members.get(doc_id, 0)
            if numbered >> place & 1:
                self._numbered_members -= 1
                if numbered == 1 << place:
                    del self._members[doc_id]
                else:
                    self._members[doc_id] = numbered & ~(1 << place)
            return
        key = self._by_inode.pop(ino, None)
        if key is not None and self._by_key.get(key) == ino:
            del self._by_key[key]
