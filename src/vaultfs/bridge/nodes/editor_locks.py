"""The lock file shown for a document another user has checked out.

A document the vault says is checked out (its record's ``locked__v``), and that this
mount does not hold for an editor's lock file of its own, lists LibreOffice's lock file
``.~lock.<source file name>#`` in its directory (``Documents.children``), so that
LibreOffice on this machine says who edits the document and offers to open it
read-only. Its content names the holder in LibreOffice's format
(``write.editor_locks.lock_line``), read when first opened or stat'ed after the index
changed. It is read-only: writing it, or creating it anew, fails with EBUSY (the
document is checked out by someone else); removing or replacing it with EPERM.
Office's ``~$`` owner file is not shown (``docs/writing.md`` says why).
"""

from __future__ import annotations

from vaultfs import errors
from vaultfs.bridge.fs.attributes import Attr
from vaultfs.bridge.fs.families import Parts, is_writing
from vaultfs.bridge.fs.handles import Snapshot
from vaultfs.bridge.fs.opening import Opened
from vaultfs.bridge.fs.paths import DisplayPaths
from vaultfs.bridge.nodes.family import Family
from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.keys import NodeKey
from vaultfs.bridge.write.editor_locks import lock_file_name

__all__ = ["EditorLockKey", "EditorLocksShown", "editor_lock"]

_EDITOR_LOCK = "editorlock"


class EditorLockKey(NodeKey):
    """The lock file shown for a document checked out elsewhere: ``(editorlock, id)``."""

    __slots__ = ()
    OF_DOCUMENT = True
    KINDS = FILE_KINDS = frozenset({_EDITOR_LOCK})


def editor_lock(doc_id: int) -> EditorLockKey:
    return EditorLockKey(_EDITOR_LOCK, doc_id)


class EditorLocksShown(Family):
    key_type = EditorLockKey

    def step(self, paths: DisplayPaths, key: NodeKey) -> tuple[NodeKey, str] | None:
        doc = keys.document(key.doc_id)
        source = paths.listed(doc, keys.source(key.doc_id)) or paths.filename(key.doc_id)
        return (doc, lock_file_name(source)) if source else None

    async def attributes(self, parts: Parts, key: NodeKey, ino: int) -> Attr:
        content = await parts.write.editor_locks.content(key.doc_id)
        mtime, ctime = await parts.attributes.document_times(key.doc_id)
        return parts.attributes.file(ino, 0o444, len(content), mtime, ctime)

    async def open(self, parts: Parts, key: NodeKey, ino: int, flags: int) -> Opened:
        if is_writing(flags):
            parts.writable()
            raise errors.LockedByOther(f"document {key.doc_id} is checked out by another user")
        return parts.opener.direct(Snapshot(await parts.write.editor_locks.content(key.doc_id)))
