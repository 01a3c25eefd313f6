"""The path a user knows a node by: what the status and the log lines show.

Owns turning a node key (``tree.nodes``) or an inode into its path in the mount,
relative to the mount point (``General/Protocol/protocol.pdf``). Never asks the vault
and never lists a directory: the names come from the listings the tree made last, from
the index's records where a listing is not at hand, and from the mount's own scratch
files and new folders. A name may therefore be one index generation old; that is good
enough to tell a user which file a line is about, and it keeps a status read and a
log line free of API calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from vaultfs.bridge.fs.inodes import InodeTable
from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.filenames import Sibling, assign_names, escape
from vaultfs.bridge.tree.keys import ROOT, NodeKey, typed
from vaultfs.bridge.tree.nodes import folder_of
from vaultfs.bridge.tree.tree import Tree

if TYPE_CHECKING:
    from vaultfs.bridge.write.scratch import Scratch

__all__ = ["DisplayPaths", "Step"]

#: (parent, name) of a node, as its family gives it (``nodes.registry.Registry.step``):
#: None when not known
Step = Callable[["DisplayPaths", NodeKey], "tuple[NodeKey, str] | None"]

#: how deep a chain of parents may go (a document's deepest file is 7 levels down)
_MAX_DEPTH = 16


class DisplayPaths:
    def __init__(
        self,
        tree: Tree,
        step: Step,
        scratch: Callable[[], Scratch | None],
        resolve: Callable[[NodeKey], NodeKey] = lambda key: key,
        inodes: InodeTable | None = None,
    ) -> None:
        """``step``: a node's parent and name, which its family knows;
        ``scratch``: the mount's scratch files (None on a read-only mount);
        ``resolve``: the node a key the kernel still holds stands for now (a scratch
        file that became a document); ``inodes``: for ``of_inode``."""
        self.tree = tree
        self._step_of = step
        self._scratch = scratch
        self._resolve = resolve
        self._inodes = inodes

    # --- for people ----------------------------------------------------------------

    def show(self, key: NodeKey) -> str:
        """``key``'s path for a log line; its kind and numbers when it has no path."""
        path = self.of_key(key)
        if path is None:
            return " ".join(str(part) for part in key)  # a StrEnum prints its value
        return path or "/"

    def show_inode(self, ino: int, name: str | None = None) -> str:
        """The path of inode ``ino`` (and of ``name`` in it, for an operation on a
        name in a directory) for a log line."""
        key = self._inodes.key(ino) if self._inodes is not None else None
        if key is None:
            where = f"inode {ino}"
            return where if name is None else f"{name!r} in {where}"
        if name is None:
            return self.show(key)
        parent = self.of_key(key)
        if parent is None:
            return f"{name!r} in {self.show(key)}"
        return f"{parent}/{name}" if parent else name

    # --- paths ---------------------------------------------------------------------

    def of_document(self, doc_id: int) -> str | None:
        return self.of_key(keys.document(doc_id))

    def of_source(self, doc_id: int) -> str | None:
        """The document's source file (where its drafts are saved)."""
        return self.of_key(keys.source(doc_id))

    def of_key(self, key: NodeKey) -> str | None:
        """``key``'s path relative to the mount point ("" for the root), None when it
        is not known without asking the vault (a document not in the index)."""
        parts: list[str] = []
        current: NodeKey | None = typed(self._resolve(key))
        for _ in range(_MAX_DEPTH):
            if current is None:
                return None
            if current == ROOT:
                return "/".join(reversed(parts))
            step = self._step(current)
            if step is None:
                return None
            current, name = step
            parts.append(name)
        return None

    def _step(self, key: NodeKey) -> tuple[NodeKey, str] | None:
        """(parent, name) of ``key``, None when not known: its family's answer."""
        return self._step_of(self, key)

    # --- what the families' steps are made of ----------------------------------------

    def listed(self, parent: NodeKey, key: NodeKey) -> str | None:
        """The name ``key`` had in the last listing of ``parent`` (none made: None)."""
        return self.tree.listed_name(parent, key)

    def filename(self, doc_id: int) -> str | None:
        record = self.tree.index.get(doc_id)
        filename = record.get("filename__v") if record is not None else None
        return escape(str(filename)) if filename else None

    def document_dir(self, doc_id: int) -> tuple[NodeKey, str] | None:
        record = self.tree.index.get(doc_id)
        if record is None:
            return None
        parent = folder_of(record)[-1]
        name = self.listed(parent, keys.document(doc_id))
        if name is None:  # its folder not listed yet: its name without its siblings'
            (name,) = assign_names([Sibling(str(record.get("name__v") or doc_id), str(doc_id))])
        return parent, name

    def local(self, key: NodeKey) -> tuple[NodeKey, str] | None:
        scratch = self._scratch()
        if scratch is None:
            return None
        item = scratch.file(key) or scratch.folder(key)
        if item is None:
            return None
        return self._resolve(item.parent), item.name
