"""The overlay of names: what ``lookup`` and ``readdir`` see on top of the tree.

Owns the names a mount shows beyond the vault's tree (``tree.Tree``, whose listings
the node families make): the scratch files and new folders (``write.scratch``), the entries
hidden for a minute (by an ``rm -r`` walk, or by a rename of a source file away), the
versions deleted by the removal of their file (their directory's rmdir then finds
nothing and succeeds), and the aliases a rename or a new document leaves behind (the
kernel keeps the inode it knew, which now stands for another node). Every lookup and
listing of the file system goes through ``child`` and ``children``. What a name
becomes when written or removed is the node families' (``bridge.nodes``) and
``write.new_documents``'.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping

from vaultfs import errors
from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.folder_listing import name_in
from vaultfs.bridge.tree.keys import Kind, NodeKey, typed
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.tree.versions import parse_version
from vaultfs.bridge.write.scratch import NewFolder, Scratch, ScratchFile

__all__ = ["Overlay"]

#: how long an entry hidden by unlink/rmdir or a rename of the source file stays hidden
_HIDE_FOR = 60.0


class Overlay:
    def __init__(self, tree: Tree, scratch: Scratch | None, *, allow_delete: bool) -> None:
        """``scratch``: the scratch files, None on a mount without a spool."""
        self.tree = tree
        self.scratch = scratch
        self.allow_delete = allow_delete
        #: node -> monotonic time until which it is left out of its directory
        self._hidden: dict[NodeKey, float] = {}
        #: node the kernel still knows -> the node it now stands for
        self.aliases: dict[NodeKey, NodeKey] = {}
        #: versions deleted by unlink of their file: (doc id, major, minor)
        self._deleted: set[tuple[int, int, int]] = set()

    # --- what a key stands for ------------------------------------------------------

    def resolve(self, key: NodeKey) -> NodeKey:
        return self.aliases.get(key, key)

    def stands_for(self, key: NodeKey) -> bool:
        """Whether a node the kernel knows stands for ``key`` now (a folder made with
        mkdir that became this document, a file renamed over it)."""
        return key in self.aliases.values()

    def unshadow(self, scratch_key: NodeKey) -> None:
        """The vault's file a scratch file stood for while written is shown again."""
        for key in [k for k, v in self.aliases.items() if v == scratch_key]:
            del self.aliases[key]

    # --- hidden names ---------------------------------------------------------------

    def hidden(self, key: NodeKey) -> bool:
        until = self._hidden.get(key)
        if until is None:
            return False
        if time.monotonic() < until:
            return True
        del self._hidden[key]
        return False

    def hide(self, key: NodeKey) -> None:
        self._hidden[key] = time.monotonic() + _HIDE_FOR

    def unhide(self, key: NodeKey) -> None:
        self._hidden.pop(key, None)

    def forget_document(self, doc_id: int) -> None:
        """The document is deleted: nothing of it stays hidden."""
        for hidden in [k for k in map(typed, self._hidden) if k.OF_DOCUMENT and k.doc_id == doc_id]:
            del self._hidden[hidden]

    def version_deleted(self, doc_id: int, major: int, minor: int) -> None:
        self._deleted.add((doc_id, major, minor))

    def deleted_version(self, parent: NodeKey, name: str) -> bool:
        """Whether ``name`` in ``parent`` is a version whose file's removal deleted it."""
        version = parse_version(name)
        return (
            parent.kind == Kind.VERS
            and version is not None
            and (parent.doc_id, *version) in self._deleted
        )

    # --- names ----------------------------------------------------------------------

    async def child(self, parent: NodeKey, name: str) -> NodeKey | None:
        if self.scratch is not None:
            found = self.scratch.lookup(parent, name)
            if found is not None:
                # A new document's file under its writer's name (a WebDAV front keeps
                # it a while: ``new_documents``) is the document's source file.
                source = self.resolve(found)
                return None if source != found and self.hidden(source) else source
        child = await self.tree.lookup(parent, name)
        if child is None or self.hidden(child):
            return None
        return child

    async def children(self, parent: NodeKey) -> Mapping[str, NodeKey]:
        """The listing of ``parent`` as programs see it; the tree's own (not a copy: a
        folder of a million documents) when nothing in it is hidden or added."""
        listing = await self.tree.children(parent)
        scratch = self.scratch.names_in(parent) if self.scratch is not None else {}
        if scratch and self.aliases:
            resolved = ((name, self.resolve(key)) for name, key in scratch.items())
            scratch = {name: key for name, key in resolved if not self.hidden(key)}
        if not self._hidden and not scratch:
            return listing
        return _Shown(listing, scratch, self.hidden)

    async def source_name(self, doc_id: int) -> str | None:
        """The name of the document's source file in its directory (hidden or not)."""
        source = keys.source(doc_id)
        listing = await self.tree.children(keys.document(doc_id))
        return next((n for n, k in listing.items() if k == source), None)

    # --- the mount's own files ------------------------------------------------------

    def store(self) -> Scratch:
        """The scratch files, or ReadOnly on a mount without a spool."""
        if self.scratch is None:
            raise errors.ReadOnly("this mount has no write-back spool")
        return self.scratch

    def scratch_file(self, key: NodeKey) -> ScratchFile:
        scratch = self.scratch.file(key) if self.scratch is not None else None
        if scratch is None:
            raise errors.NotFound("scratch file no longer exists")
        return scratch

    def new_folder(self, key: NodeKey) -> NewFolder:
        folder = self.scratch.folder(key) if self.scratch is not None else None
        if folder is None:
            raise errors.NotFound("directory no longer exists")
        return folder

    # --- removing -------------------------------------------------------------------

    def deleting(self) -> None:
        """Refuses a deletion unless the mount allows them (``-o allow_delete``)."""
        if not self.allow_delete:
            raise errors.OperationNotPermitted("deleting is off (mount with -o allow_delete)")

    async def must_be_empty(self, key: NodeKey, name: str) -> None:
        if await self.children(key):
            raise errors.DirectoryNotEmpty(name)

    async def hide_empty(self, key: NodeKey, name: str) -> None:
        """rmdir of a directory of the vault that stays in the vault (an ``rm -r`` walk
        passes through it): hidden for a minute once empty."""
        await self.must_be_empty(key, name)
        self.hide(key)


class _Shown(Mapping[str, NodeKey]):
    """A listing with the mount's scratch files added and its hidden entries left out,
    made as it is read (the listing may be a folder's of a million documents)."""

    def __init__(
        self,
        listing: Mapping[str, NodeKey],
        added: Mapping[str, NodeKey],
        hidden: Callable[[NodeKey], bool],
    ) -> None:
        self._listing = listing
        self._added = added
        self._hidden = hidden

    def __getitem__(self, name: str) -> NodeKey:
        found = self._added.get(name)
        if found is None:
            found = self._listing[name]
            if self._hidden(found):
                raise KeyError(name)
        return found

    def items(self) -> Iterator[tuple[str, NodeKey]]:  # type: ignore[override]
        yield from self._added.items()
        for name, key in self._listing.items():
            if name not in self._added and not self._hidden(key):
                yield name, key

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self.items())

    def __len__(self) -> int:
        return sum(1 for _ in self.items())

    def name_of(self, child: NodeKey) -> str | None:
        """The name ``child`` is shown by (``folder_listing.name_in``)."""
        added = next((name for name, key in self._added.items() if key == child), None)
        if added is not None or self._hidden(child):
            return added
        name = name_in(self._listing, child)
        return None if name is None or name in self._added else name
