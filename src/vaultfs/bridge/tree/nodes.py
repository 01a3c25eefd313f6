"""The nodes of the tree: their kinds, their keys, and the questions asked about them.

A node key is a tuple whose first item is the node's ``Kind`` and whose other items
name the node within its kind (document ids, version numbers, names). Keys are
hashable and compare by value, so the same node always has the same key; a kind is a
``str`` enum, so ``(Kind.DOC, 12) == ("doc", 12)``. Every key the bridge makes::

    (ROOT,)  (CTL,)  (STATUS,)                              the root, .vaultfs, its status
    (TYPE, t)  (SUB, t, s)  (CLS, t, s, c)                  folders of the type hierarchy
    (DOC, id)  (SRC, id)                                    a document, its latest file
    (VERS, id)  (VER, id, M, m)  (VSRC, id, M, m)           versions
    (VRENDS, id, M, m)  (VREND, id, M, m, rtype)            a version's renditions
    (RENDS, id)  (REND, id, rtype)                          latest renditions
    (ATTS, id)  (ATT, id, attachment_id)                    attachments
    (EVENTS, id)                                            its .events.jsonl (not listed)
    (RELS, id)  (RELT, id, type)  (RLINK, id, rel_id)       relationships/, a type, a link
    (SCRATCH, n)  (NEWDIR, n)                               a scratch file, a mkdir'ed folder
    (LOST,)  (LOSTF, name)                                  .vaultfs/lost+found and its files
    (SEARCH,)  (SEARCHES, form)                             .search, .search/all|content
    (QUERY, form, words)  (QLINK, form, words, id)          a search's folder, a found link
    (VIEW, filter)  (VLINK, filter, id)                     a view (Favorites…), its links

This module owns the kinds and the sets of kinds that share a behaviour; the other
modules ask it rather than compare kinds among themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

__all__ = [
    "CONTROL_DIR",
    "DETAILS_DIRS",
    "DOCUMENT_DIRS",
    "DOCUMENT_DIR_NODES",
    "DOC_DIR_NAMES",
    "EVENTS_FILE",
    "FIELD_NODES",
    "FILES",
    "FOLDERS",
    "LINKS",
    "LOCAL_NODES",
    "LOST_AND_FOUND",
    "NEW_DOCUMENT_DIRS",
    "NEW_FIELD_NODES",
    "QUERY_NODES",
    "RELATIONSHIP_DIRS",
    "ROOT",
    "SEARCH_DIR",
    "UPLOADED_FILES",
    "UPLOAD_DIRS",
    "VERSION_NODES",
    "WRITABLE_DIRS",
    "Kind",
    "NodeKey",
    "doc_id",
    "folder_of",
    "folder_path",
    "is_file",
    "is_folder",
    "kind",
    "number",
    "version",
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
    SEARCH = "search"
    SEARCHES = "searches"
    QUERY = "query"
    QLINK = "qlink"
    VIEW = "view"
    VLINK = "vlink"


#: a node: its kind, then what names it within that kind
NodeKey = tuple[str | int, ...]

ROOT: NodeKey = (Kind.ROOT,)
#: the root's hidden directory (status, lost+found); left out of listings
CONTROL_DIR = ".vaultfs"
#: a document directory's events file (``lifecycle.events``); reachable by name only
EVENTS_FILE = ".events.jsonl"
#: the root's search directory (``tree.queries``); reachable by name, never listed
SEARCH_DIR = ".search"
#: the name of lost+found, in ``.vaultfs`` and in the spool directory alike
LOST_AND_FOUND = "lost+found"

#: the folders of the type hierarchy (the root is a folder listing too, but not these)
FOLDERS = frozenset({Kind.TYPE, Kind.SUB, Kind.CLS})
#: nodes that are files; every other node is a directory
FILES = frozenset(
    {
        Kind.SRC,
        Kind.VSRC,
        Kind.REND,
        Kind.VREND,
        Kind.ATT,
        Kind.STATUS,
        Kind.SCRATCH,
        Kind.LOSTF,
        Kind.EVENTS,
    }
)
#: the fixed entries of a document directory (a source file may not take these names)
DOC_DIR_NAMES = {
    "versions": Kind.VERS,
    "renditions": Kind.RENDS,
    "attachments": Kind.ATTS,
    "relationships": Kind.RELS,
}
#: directories inside a document directory (hidden by rmdir in an ``rm -r`` walk)
DOCUMENT_DIRS = frozenset(
    {Kind.VERS, Kind.VER, Kind.VRENDS, Kind.RENDS, Kind.ATTS, Kind.RELS, Kind.RELT}
)
#: the relationships of a document (``tree.relationships``): its directory, a type's
RELATIONSHIP_DIRS = frozenset({Kind.RELS, Kind.RELT})
#: nodes that are symbolic links (a relationship, a search's or a view's document)
LINKS = frozenset({Kind.RLINK, Kind.QLINK, Kind.VLINK})
#: the search folders and views (``tree.queries``): their results change with no
#: index change, so they are the mount's own nodes for the kernel (short timeouts)
QUERY_NODES = frozenset({Kind.SEARCH, Kind.SEARCHES, Kind.QUERY, Kind.QLINK, Kind.VIEW, Kind.VLINK})
#: directories whose listing needs the document's details (``Tree.details``)
DETAILS_DIRS = frozenset({Kind.VERS, Kind.RENDS, Kind.ATTS})
#: directories a file written into is uploaded from (``write.files_in``)
UPLOAD_DIRS = frozenset({Kind.RENDS, Kind.VRENDS, Kind.ATTS})
#: the vault's files in those: writing one replaces it (a rendition) or adds a
#: version of it (an attachment)
UPLOADED_FILES = frozenset({Kind.REND, Kind.VREND, Kind.ATT})
#: directories the user may create (or, in lost+found, remove) entries in
WRITABLE_DIRS = frozenset({*FOLDERS, Kind.DOC, Kind.NEWDIR, Kind.LOST, Kind.RELT, *UPLOAD_DIRS})
#: nodes that show a record's fields as extended attributes
FIELD_NODES = frozenset({Kind.DOC, Kind.SRC, Kind.VER, Kind.VSRC})
#: directories a new file becomes a new document in
NEW_DOCUMENT_DIRS = frozenset({*FOLDERS, Kind.NEWDIR})
#: nodes whose fields the user gives before a document exists (``write.new_fields``)
NEW_FIELD_NODES = frozenset({Kind.SCRATCH, *FOLDERS})
#: nodes of one version of a document (immutable content)
VERSION_NODES = frozenset({Kind.VER, Kind.VSRC, Kind.VRENDS, Kind.VREND})
#: nodes of the mount alone, not of the vault: nothing announces their changes, and a
#: name of theirs may outlive its node on purpose (a scratch file that became a document);
#: a document's events file too (nothing announces new events: short timeouts)
LOCAL_NODES = frozenset(
    {
        Kind.CTL,
        Kind.STATUS,
        Kind.LOST,
        Kind.LOSTF,
        Kind.SCRATCH,
        Kind.NEWDIR,
        Kind.EVENTS,
        *QUERY_NODES,
    }
)
#: a document's directory and its fixed subdirectories (their ctime is the document's)
DOCUMENT_DIR_NODES = frozenset({Kind.DOC, Kind.VERS, Kind.RENDS, Kind.ATTS, Kind.RELS})


def kind(key: NodeKey) -> Kind:
    return Kind(str(key[0]))


def is_file(key: NodeKey) -> bool:
    return key[0] in FILES


def is_folder(key: NodeKey) -> bool:
    """A folder of the type hierarchy (type, subtype, classification)."""
    return key[0] in FOLDERS


def doc_id(key: NodeKey) -> int:
    """The document a document's node (everything from DOC to ATT) belongs to."""
    return int(key[1])


def version(key: NodeKey) -> tuple[int, int]:
    """(major, minor) of a version's node (VER, VSRC, VRENDS, VREND)."""
    return int(key[2]), int(key[3])


def number(key: NodeKey) -> int:
    """The number of a scratch file or new folder, the id of an attachment or of a
    relationship."""
    return int(key[-1])


def folder_path(key: NodeKey) -> str:
    """A folder's path in the mount for a log line (``General/Protocol``): its key's
    names, which are the folders' names when the records carry labels (they usually
    do); ``fs.paths`` gives any node's path as listed."""
    return "/".join(str(part) for part in key[1:]) or "/"


def folder_of(record: Mapping[str, Any]) -> list[NodeKey]:
    """The folder chain (type, subtype, classification) a document sits in."""
    type_ = str(record.get("type__v") or "")
    subtype = str(record.get("subtype__v") or "")
    classification = str(record.get("classification__v") or "")
    chain: list[NodeKey] = [(Kind.TYPE, type_)]
    if subtype:
        chain.append((Kind.SUB, type_, subtype))
        if classification:
            chain.append((Kind.CLS, type_, subtype, classification))
    return chain
