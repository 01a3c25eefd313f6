"""What the file system asks of the node families, and what it hands them.

The file system (``filesystem``) dispatches every operation to the family of the node
it acts on; this module is the contract between the two, owned by the file system so
that the families (``bridge.nodes``) import it and it imports nothing of them:
``NodeFamily``, what a family answers; ``Families``, the registry that finds a key's
family (``nodes.registry.Registry``); ``Change`` and ``Move``, the arguments of a
setattr and a rename; and ``Parts``, the parts of the mount a family operation may
use, made once by the builder (``core.build``) and handed to every operation (a
family takes what it needs from it and keeps nothing), with the two checks every
writing operation makes first (``writable``, ``may_create``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from vaultfs import errors
from vaultfs.bridge.tree.keys import NodeKey

if TYPE_CHECKING:
    from vaultfs.bridge.content.pins import Pins
    from vaultfs.bridge.content.prefetch import Prefetcher
    from vaultfs.bridge.fs.attributes import Attr, Attributes
    from vaultfs.bridge.fs.freshness import Freshness
    from vaultfs.bridge.fs.opening import Opened, Opener
    from vaultfs.bridge.fs.options import Options
    from vaultfs.bridge.fs.overlay import Overlay
    from vaultfs.bridge.fs.paths import DisplayPaths
    from vaultfs.bridge.fs.status import StatusReport
    from vaultfs.bridge.lifecycle.attributes import LifeAttributes
    from vaultfs.bridge.tree.tree import Tree
    from vaultfs.bridge.write.deletions import Deletions
    from vaultfs.bridge.write.editing import Editing
    from vaultfs.bridge.write.editor_locks import EditorLocks
    from vaultfs.bridge.write.fields import FieldEditor
    from vaultfs.bridge.write.linking import Linker
    from vaultfs.bridge.write.new_documents import NewDocuments

__all__ = ["Change", "Families", "Move", "NodeFamily", "Parts", "Writing", "is_writing"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Change:
    """What a setattr(2) asks: a new size (through open file ``fh``: ftruncate), mode
    or modification time; None: unchanged."""

    size: int | None
    fh: int | None = None
    mode: int | None = None
    mtime_ns: int | None = None


@dataclass(frozen=True)
class Move:
    """A rename(2): ``source``, named ``old_name`` in ``old``, to ``new_name`` in
    ``new``, where ``target`` is (None: nothing is)."""

    source: NodeKey
    target: NodeKey | None
    old: NodeKey
    new: NodeKey
    new_name: str


class NodeFamily(Protocol):
    """What the file system asks of a family of nodes."""

    @property
    def key_type(self) -> type[NodeKey]:
        """The key type of the family's nodes."""
        ...

    @property
    def root_names(self) -> Mapping[str, NodeKey]:
        """Names at the root that lead to the family's nodes without being listed."""
        ...

    @property
    def root_listed(self) -> Mapping[str, NodeKey]:
        """Names at the root listed after the vault's folders and documents (a type of
        the same label keeps its name; the entry then gets `` [<its kind>]``)."""
        ...

    def is_file(self, key: NodeKey) -> bool:
        """A regular file (or a link); every other node is a directory."""
        ...

    def is_local(self, key: NodeKey) -> bool:
        """A node of the mount alone, not of the vault: nothing announces its
        changes (short timeouts), and its name may outlive it on purpose."""
        ...

    async def children(self, tree: Tree, key: NodeKey) -> Mapping[str, NodeKey]:
        """Name -> child of directory ``key`` as the vault's records make it."""
        ...

    async def unlisted(self, tree: Tree, key: NodeKey, name: str) -> NodeKey | None:
        """A child ``name`` of ``key`` that listings leave out (reachable by name)."""
        ...

    def step(self, paths: DisplayPaths, key: NodeKey) -> tuple[NodeKey, str] | None:
        """(parent, name) of ``key`` for a path a user reads; None when not known."""
        ...

    def shared_names(self) -> Mapping[str, NodeKey]:
        """Names that are the same node in every directory of this family (reached by
        name, as ``unlisted`` answers them: a document directory's ``.hidden``)."""
        ...

    async def attributes(self, parts: Parts, key: NodeKey, ino: int) -> Attr: ...

    async def listed_attributes(
        self, parts: Parts, keys: list[NodeKey], inos: list[int]
    ) -> list[Attr | None]:
        """``attributes`` of ``keys`` listed together (a page of a listing), in their
        order; None for a node that left the vault since it was listed."""
        ...

    async def open(self, parts: Parts, key: NodeKey, ino: int, flags: int) -> Opened: ...

    async def setattr(self, parts: Parts, key: NodeKey, change: Change) -> None:
        """truncate(2) (through an open file: ftruncate), chmod, utimes."""
        ...

    async def readlink(self, parts: Parts, key: NodeKey) -> str: ...

    def lifecycle_of(self, key: NodeKey) -> int | None:
        """The document whose lifecycle the node shows (``user.vault.actions``,
        ``action``, ``event``, ``last_error``); None: none."""
        ...

    async def fields(self, parts: Parts, key: NodeKey) -> dict[str, Any]:
        """The fields shown as extended attributes (``user.vault.<field>``)."""
        ...

    async def set_field(self, parts: Parts, key: NodeKey, name: str, value: bytes | None) -> None:
        """setfattr of field ``name`` (None: its removal)."""
        ...

    async def create(self, parts: Parts, parent: NodeKey, name: str, mode: int) -> NodeKey:
        """The node a new file ``name`` in directory ``parent`` stands for."""
        ...

    def mkdir(self, parts: Parts, parent: NodeKey, name: str) -> NodeKey:
        """The node a new directory ``name`` in ``parent`` stands for."""
        ...

    async def symlink(self, parts: Parts, parent: NodeKey, name: str, target: str) -> NodeKey:
        """symlink(2) of ``name`` -> ``target`` in directory ``parent``."""
        ...

    async def unlink_in(self, parts: Parts, parent: NodeKey, name: str) -> None:
        """unlink(2) of ``name`` in directory ``parent`` (asked of the parent's family)."""
        ...

    async def unlink(self, parts: Parts, key: NodeKey, name: str) -> None:
        """unlink(2) of ``key``, listed as ``name`` (asked of its own family)."""
        ...

    async def rmdir(self, parts: Parts, parent: NodeKey, key: NodeKey, name: str) -> None:
        """rmdir(2) of ``key``, ``name`` in ``parent``."""
        ...

    async def rename(self, parts: Parts, move: Move) -> None:
        """rename(2) of ``move.source`` (asked of the source's family)."""
        ...


class Families(Protocol):
    """The registered families (``nodes.registry.Registry``): a key's family, and what
    the file system asks of every family at once."""

    @property
    def root_names(self) -> Mapping[str, NodeKey]:
        """Names at the root that lead to a family's nodes without being listed."""
        ...

    def of(self, key: tuple[str | int, ...]) -> NodeFamily:
        """The family of node ``key``."""
        ...

    def is_file(self, key: NodeKey) -> bool: ...

    def is_local(self, key: NodeKey) -> bool: ...


def is_writing(flags: int) -> bool:
    """Whether open() ``flags`` write (or truncate)."""
    return bool(flags & os.O_ACCMODE != os.O_RDONLY or flags & os.O_TRUNC)


@dataclass(frozen=True)
class Writing:
    """The write side (``bridge.write``): what a family's operations change the vault
    and the mount's new files through."""

    #: saves of a document's source file (check-out, check-in)
    editing: Editing
    #: what a closed scratch file becomes (a document, a draft, an upload)
    new_documents: NewDocuments
    #: setfattr of a record's fields; a document's new name
    fields: FieldEditor
    #: a document or a version deleted
    deletions: Deletions
    #: relationships made by ``ln -s`` and deleted by ``rm``
    links: Linker
    #: editors' lock files: check-outs held here, and those held elsewhere shown
    editor_locks: EditorLocks


@dataclass(frozen=True)
class Parts:
    """The parts of the mount a family operation may use: what the file system shares
    with the families (the tree, the names overlay, attributes, opening), the write
    side, what a few families show (the status, a document's lifecycle), and the
    documents kept for offline, which the file system's extended attributes change."""

    options: Options
    tree: Tree
    registry: Families
    overlay: Overlay
    attributes: Attributes
    opener: Opener
    freshness: Freshness
    prefetch: Prefetcher
    write: Writing
    life: LifeAttributes
    report: StatusReport
    #: the documents kept for offline (``user.vaultfs.pin``)
    pins: Pins

    def writable(self) -> None:
        if self.options.read_only:
            raise errors.ReadOnly("mounted read-only")

    def may_create(self, name: str) -> None:
        """Refuse a new document now, not at close, when the vault said (at mount time)
        that this user may not create documents."""
        if not self.options.may_create:
            log.warning("new %r refused: this user may not create documents", name)
            raise errors.AccessDenied("this user may not create documents")
