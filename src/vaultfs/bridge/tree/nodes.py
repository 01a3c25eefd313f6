"""The names and kinds of nodes that modules outside the node families ask about.

What each kind of node does is its family's (``bridge.nodes``); the key types are
``keys``'. This module keeps the fixed names of the tree (``.vaultfs``, ``lost+found``,
a document's subdirectories and ``.events.jsonl``), the few sets of kinds the write
side, the name rules and ``fs.freshness`` test a directory against (type folders,
directories a new file becomes a document or an upload in, the folders of the type
hierarchy, directories whose names never change), a folder's path for a log line and
the folders a document sits in. What a key names (its document, version, labels,
number) its key type tells (``keys``), never a position in the tuple.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.keys import ROOT, Kind, NodeKey

__all__ = [
    "CONTROL_DIR",
    "DETAILS_DIRS",
    "DOC_DIRS",
    "DOC_DIR_NAMES",
    "EVENTS_FILE",
    "FIXED_DIRS",
    "FOLDERS",
    "LOST_AND_FOUND",
    "NEW_DOCUMENT_DIRS",
    "ROOT",
    "UPLOAD_DIRS",
    "Kind",
    "NodeKey",
    "folder_of",
    "folder_path",
]

#: the root's hidden directory (status, lost+found); left out of listings
CONTROL_DIR = ".vaultfs"
#: a document directory's events file (``lifecycle.events``); reachable by name only
EVENTS_FILE = ".events.jsonl"
#: the name of lost+found, in ``.vaultfs`` and in the spool directory alike
LOST_AND_FOUND = "lost+found"

#: the folders of the type hierarchy (the root is a folder listing too, but not these)
FOLDERS = frozenset({Kind.TYPE, Kind.SUB, Kind.CLS})
#: the fixed entries of a document directory (a source file may not take these names)
DOC_DIR_NAMES = {
    "versions": Kind.VERS,
    "renditions": Kind.RENDS,
    "attachments": Kind.ATTS,
    "relationships": Kind.RELS,
}
#: directories whose listing needs the document's details (``Tree.details``)
DETAILS_DIRS = frozenset({Kind.VERS, Kind.RENDS, Kind.ATTS})
#: directories a file written into is uploaded from (``write.files_in``)
UPLOAD_DIRS = frozenset({Kind.RENDS, Kind.VRENDS, Kind.ATTS})
#: directories a new file becomes a new document in
NEW_DOCUMENT_DIRS = frozenset({*FOLDERS, Kind.NEWDIR})
#: a document directory's subdirectories, whose names never change: they go with
#: their document's directory (``fs.freshness`` checks none of them)
DOC_DIRS = frozenset(DOC_DIR_NAMES.values())
#: directories whose names are never checked (``fs.freshness``): a version's content
#: and renditions never change, and a version only ever leaves ``versions/``
FIXED_DIRS = frozenset({Kind.VERS, Kind.VER, Kind.VRENDS})


def folder_path(key: NodeKey) -> str:
    """A folder's path in the mount for a log line (``General/Protocol``): its key's
    labels, which are the folders' names when the records carry labels (they usually
    do); ``fs.paths`` gives any node's path as listed."""
    folder = keys.typed(key)
    if not isinstance(folder, keys.FolderKey):
        return repr(folder)
    return "/".join(folder.labels) or "/"


def folder_of(record: Mapping[str, Any]) -> list[NodeKey]:
    """The folder chain (type, subtype, classification) a document sits in."""
    type_ = str(record.get("type__v") or "")
    subtype = str(record.get("subtype__v") or "")
    classification = str(record.get("classification__v") or "")
    chain: list[NodeKey] = [keys.folder(type_)]
    if subtype:
        chain.append(keys.folder(type_, subtype))
        if classification:
            chain.append(keys.folder(type_, subtype, classification))
    return chain
