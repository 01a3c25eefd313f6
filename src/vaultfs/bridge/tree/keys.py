"""Typed node keys: one small frozen type per node family, and the kinds of node.

A key is a tuple whose first item is the node's ``Kind`` and whose other items name
the node within its kind (document ids, version numbers, names); each family's key is
its own ``NodeKey`` subclass, so the handler of a node (``bridge.nodes``) is found from
the key's type alone, once. Keys are immutable, hashable and compare by value, and a
typed key equals the plain tuple of the same items (``source(12) == ("src", 12)``): a
key read back from elsewhere (a status record, a test) is made typed again with
``typed``. The constructors below are how the bridge makes keys. Every key::

    FolderKey        (ROOT,)  (TYPE, t)  (SUB, t, s)  (CLS, t, s, c)   the type folders
    DocumentKey      (DOC, id)  (EVENTS, id)           a document, its .events.jsonl
    SourceKey        (SRC, id)                         its latest source file
    VersionKey       (VERS, id)  (VER, id, M, m)  (VSRC, id, M, m)
    RenditionKey     (RENDS, id)  (REND, id, rtype)  (VRENDS, id, M, m)
                     (VREND, id, M, m, rtype)
    AttachmentKey    (ATTS, id)  (ATT, id, attachment id)
    RelationshipKey  (RELS, id)  (RELT, id, type)  (RLINK, id, relationship id)
    ControlKey       (CTL,)  (STATUS,)  (LOST,)  (LOSTF, name)   .vaultfs and lost+found
    LocalKey         (SCRATCH, n)  (NEWDIR, n)         a scratch file, a mkdir'ed folder

A new family declares its key type (a ``NodeKey`` subclass with its ``KINDS``, plain
strings) in its own module; ``NodeKey.__init_subclass__`` makes ``typed`` know it.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Any, ClassVar, Self

__all__ = [
    "CONTROL",
    "LOST",
    "ROOT",
    "STATUS",
    "AttachmentKey",
    "ControlKey",
    "DocumentKey",
    "FolderKey",
    "Kind",
    "LocalKey",
    "NodeKey",
    "RelationshipKey",
    "RenditionKey",
    "SourceKey",
    "VersionKey",
    "attachment",
    "attachments",
    "document",
    "events",
    "folder",
    "lost_file",
    "new_folder",
    "relationship_link",
    "relationship_type",
    "relationships",
    "rendition",
    "renditions",
    "scratch",
    "source",
    "typed",
    "version",
    "version_rendition",
    "version_renditions",
    "version_source",
    "versions",
]


class Kind(StrEnum):
    ROOT = "root"
    CTL = "ctl"
    STATUS = "status"
    TYPE = "type"
    SUB = "sub"
    CLS = "cls"
    DOC = "doc"
    SRC = "src"
    VERS = "vers"
    VER = "ver"
    VSRC = "vsrc"
    VRENDS = "vrends"
    VREND = "vrend"
    RENDS = "rends"
    REND = "rend"
    ATTS = "atts"
    ATT = "att"
    RELS = "rels"
    RELT = "relt"
    RLINK = "rlink"
    SCRATCH = "scratch"
    NEWDIR = "newdir"
    LOST = "lost"
    LOSTF = "lostf"
    EVENTS = "events"


#: kind -> the key type of its family (filled by ``NodeKey.__init_subclass__``)
_TYPES: dict[str, type[NodeKey]] = {}


class NodeKey(tuple[str | int, ...]):
    """A node: its kind, then what names it within that kind."""

    __slots__ = ()
    #: the kinds of node of this family
    KINDS: ClassVar[frozenset[str]] = frozenset()
    #: whether the family's nodes belong to one document (its id is ``doc_id``): a
    #: change of the document changes them
    OF_DOCUMENT: ClassVar[bool] = False
    #: the family's kinds that are regular files (every other kind is a directory)
    FILE_KINDS: ClassVar[frozenset[str]] = frozenset()
    #: the family's kinds that are the mount's own, not the vault's: nothing announces
    #: their changes
    LOCAL_KINDS: ClassVar[frozenset[str]] = frozenset()
    #: the family's kinds that show an answer of the vault's (a search, a view): it
    #: changes with no index change, so the tree keeps no listing of them; the kernel
    #: keeps them as it keeps the vault's nodes, and their family says when the answer
    #: changed (``on_changed``)
    ANSWER_KINDS: ClassVar[frozenset[str]] = frozenset()
    #: the family's kinds that are symbolic links
    LINK_KINDS: ClassVar[frozenset[str]] = frozenset()
    #: the family's kinds that are one node under the same name in many directories
    #: (every document directory's ``.hidden``), that never changes: the kernel holds
    #: it under each name, and nothing of it is followed
    SHARED_KINDS: ClassVar[frozenset[str]] = frozenset()

    def __new__(cls, kind: str, *names: str | int) -> Self:
        return super().__new__(cls, (kind, *names))

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for kind in cls.KINDS:
            if kind in _TYPES:
                raise ValueError(f"kind {kind!r} belongs to {_TYPES[kind].__name__} already")
            _TYPES[kind] = cls

    def __getnewargs__(self) -> tuple[str | int, ...]:  # copy and pickle
        return tuple(self)

    @property
    def kind(self) -> str:
        return str(self[0])

    @property
    def doc_id(self) -> int:
        """The document a document's node belongs to."""
        return int(self[1])

    @property
    def is_file(self) -> bool:
        """A regular file; every other node is a directory."""
        return self.kind in self.FILE_KINDS

    @property
    def is_local(self) -> bool:
        """A node of the mount alone, not of the vault."""
        return self.kind in self.LOCAL_KINDS

    @property
    def is_answer(self) -> bool:
        """A node of an answer of the vault's (``ANSWER_KINDS``)."""
        return self.kind in self.ANSWER_KINDS


def typed(key: tuple[str | int, ...]) -> NodeKey:
    """``key`` as its family's key type (a plain tuple, from a test or a log, too)."""
    if isinstance(key, NodeKey):
        return key
    kind, *names = key
    # One string object per kind, not one per key: ``str`` of a ``Kind`` is a new string
    # each time, and a walk makes 40,000 keys here (2 MiB of copies of "vers").
    kind = sys.intern(str(kind))
    return _TYPES[kind](kind, *names)


class FolderKey(NodeKey):
    """The root and the folders of the type hierarchy: ``(TYPE, t)``, ``(SUB, t, s)``,
    ``(CLS, t, s, c)``."""

    __slots__ = ()
    KINDS = frozenset({Kind.ROOT, Kind.TYPE, Kind.SUB, Kind.CLS})

    @property
    def labels(self) -> tuple[str, ...]:
        """The folder's names, outermost first: type, subtype, classification (the
        root: none)."""
        return tuple(str(name) for name in self[1:])

    @property
    def ancestors(self) -> list[FolderKey]:
        """The folders of the type hierarchy from the type down to this one (the
        root: none)."""
        labels = self.labels
        return [folder(*labels[:n]) for n in range(1, len(labels) + 1)]


class DocumentKey(NodeKey):
    """A document's directory and its ``.events.jsonl``: ``(DOC, id)``, ``(EVENTS, id)``."""

    __slots__ = ()
    OF_DOCUMENT = True
    KINDS = frozenset({Kind.DOC, Kind.EVENTS})
    FILE_KINDS = LOCAL_KINDS = frozenset({Kind.EVENTS})


class SourceKey(NodeKey):
    """A document's latest source file: ``(SRC, id)``."""

    __slots__ = ()
    OF_DOCUMENT = True
    KINDS = FILE_KINDS = frozenset({Kind.SRC})


class VersionKey(NodeKey):
    """``versions/``, one version's directory and its file: ``(VERS, id)``,
    ``(VER, id, M, m)``, ``(VSRC, id, M, m)``."""

    __slots__ = ()
    OF_DOCUMENT = True
    KINDS = frozenset({Kind.VERS, Kind.VER, Kind.VSRC})
    FILE_KINDS = frozenset({Kind.VSRC})

    @property
    def version(self) -> tuple[int, int]:
        return int(self[2]), int(self[3])


class RenditionKey(NodeKey):
    """Renditions, latest and of a version: ``(RENDS, id)``, ``(REND, id, rtype)``,
    ``(VRENDS, id, M, m)``, ``(VREND, id, M, m, rtype)``."""

    __slots__ = ()
    OF_DOCUMENT = True
    KINDS = frozenset({Kind.RENDS, Kind.REND, Kind.VRENDS, Kind.VREND})
    FILE_KINDS = frozenset({Kind.REND, Kind.VREND})

    @property
    def version(self) -> tuple[int, int]:
        return int(self[2]), int(self[3])

    @property
    def of_version(self) -> tuple[int, int] | None:
        """The version whose renditions these are; None: the latest version's."""
        return self.version if self.kind in (Kind.VRENDS, Kind.VREND) else None

    @property
    def directory(self) -> RenditionKey:
        """The ``renditions/`` a rendition (or that directory itself) is in."""
        version = self.of_version
        if version is None:
            return renditions(self.doc_id)
        return version_renditions(self.doc_id, *version)

    def rendition(self, rtype: str) -> RenditionKey:
        """The rendition of type ``rtype`` in this ``renditions/``."""
        version = self.of_version
        if version is None:
            return rendition(self.doc_id, rtype)
        return version_rendition(self.doc_id, *version, rtype)

    @property
    def rtype(self) -> str:
        return str(self[-1])


class AttachmentKey(NodeKey):
    """``attachments/`` and an attachment: ``(ATTS, id)``, ``(ATT, id, attachment id)``."""

    __slots__ = ()
    OF_DOCUMENT = True
    KINDS = frozenset({Kind.ATTS, Kind.ATT})
    FILE_KINDS = frozenset({Kind.ATT})

    @property
    def attachment_id(self) -> int:
        return int(self[2])

    @property
    def directory(self) -> AttachmentKey:
        """The ``attachments/`` an attachment (or that directory itself) is in."""
        return attachments(self.doc_id)


class RelationshipKey(NodeKey):
    """``relationships/``, a type's directory, a link: ``(RELS, id)``,
    ``(RELT, id, type)``, ``(RLINK, id, relationship id)``."""

    __slots__ = ()
    OF_DOCUMENT = True
    KINDS = frozenset({Kind.RELS, Kind.RELT, Kind.RLINK})
    LINK_KINDS = frozenset({Kind.RLINK})

    @property
    def relationship_type(self) -> str:
        """A type's directory: the relationship type it holds the links of."""
        return str(self[2])

    @property
    def relationship_id(self) -> int:
        """A link: the relationship it is."""
        return int(self[2])


class ControlKey(NodeKey):
    """The mount's own ``.vaultfs``: ``(CTL,)``, ``(STATUS,)``, ``(LOST,)``,
    ``(LOSTF, name)``."""

    __slots__ = ()
    KINDS = LOCAL_KINDS = frozenset({Kind.CTL, Kind.STATUS, Kind.LOST, Kind.LOSTF})
    FILE_KINDS = frozenset({Kind.STATUS, Kind.LOSTF})

    @property
    def fixed(self) -> bool:
        """Its name is there for the mount's whole life (``.vaultfs``, ``status``,
        ``lost+found``)."""
        return self.kind != Kind.LOSTF

    @property
    def lost_name(self) -> str:
        """A file in lost+found: its name."""
        return str(self[1])


class LocalKey(NodeKey):
    """A scratch file or a folder made with mkdir (the pending new files):
    ``(SCRATCH, n)``, ``(NEWDIR, n)``."""

    __slots__ = ()
    KINDS = LOCAL_KINDS = frozenset({Kind.SCRATCH, Kind.NEWDIR})
    FILE_KINDS = frozenset({Kind.SCRATCH})

    @property
    def number(self) -> int:
        return int(self[1])


ROOT = FolderKey(Kind.ROOT)
CONTROL = ControlKey(Kind.CTL)
STATUS = ControlKey(Kind.STATUS)
LOST = ControlKey(Kind.LOST)


def folder(*names: str) -> FolderKey:
    """A folder by its names: type, subtype, classification (none: the root)."""
    kind = (Kind.ROOT, Kind.TYPE, Kind.SUB, Kind.CLS)[len(names)]
    return FolderKey(kind, *names)


def document(doc_id: int) -> DocumentKey:
    # The tuple made directly: a folder's listing makes one per document.
    return tuple.__new__(DocumentKey, (Kind.DOC, doc_id))


def documents(doc_ids: list[int]) -> list[DocumentKey]:
    """``document`` of each of ``doc_ids`` (a page of a folder's listing)."""
    new, kind = tuple.__new__, Kind.DOC
    return [new(DocumentKey, (kind, doc_id)) for doc_id in doc_ids]


def events(doc_id: int) -> DocumentKey:
    return DocumentKey(Kind.EVENTS, doc_id)


def source(doc_id: int) -> SourceKey:
    return SourceKey(Kind.SRC, doc_id)


def versions(doc_id: int) -> VersionKey:
    return VersionKey(Kind.VERS, doc_id)


def version(doc_id: int, major: int, minor: int) -> VersionKey:
    return VersionKey(Kind.VER, doc_id, major, minor)


def version_source(doc_id: int, major: int, minor: int) -> VersionKey:
    return VersionKey(Kind.VSRC, doc_id, major, minor)


def renditions(doc_id: int) -> RenditionKey:
    return RenditionKey(Kind.RENDS, doc_id)


def rendition(doc_id: int, rtype: str) -> RenditionKey:
    return RenditionKey(Kind.REND, doc_id, rtype)


def version_renditions(doc_id: int, major: int, minor: int) -> RenditionKey:
    return RenditionKey(Kind.VRENDS, doc_id, major, minor)


def version_rendition(doc_id: int, major: int, minor: int, rtype: str) -> RenditionKey:
    return RenditionKey(Kind.VREND, doc_id, major, minor, rtype)


def attachments(doc_id: int) -> AttachmentKey:
    return AttachmentKey(Kind.ATTS, doc_id)


def attachment(doc_id: int, attachment_id: int) -> AttachmentKey:
    return AttachmentKey(Kind.ATT, doc_id, attachment_id)


def relationships(doc_id: int) -> RelationshipKey:
    return RelationshipKey(Kind.RELS, doc_id)


def relationship_type(doc_id: int, type_: str) -> RelationshipKey:
    return RelationshipKey(Kind.RELT, doc_id, type_)


def relationship_link(doc_id: int, relationship_id: int) -> RelationshipKey:
    return RelationshipKey(Kind.RLINK, doc_id, relationship_id)


def lost_file(name: str) -> ControlKey:
    return ControlKey(Kind.LOSTF, name)


def scratch(number: int) -> LocalKey:
    return LocalKey(Kind.SCRATCH, number)


def new_folder(number: int) -> LocalKey:
    return LocalKey(Kind.NEWDIR, number)
