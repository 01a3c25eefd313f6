"""The protocol every node family answers, and the refusals it starts from.

``NodeFamily`` is the protocol; ``Family`` is a base class whose every operation
answers as a node that does not have it (a file has no children, a directory cannot be
opened, a node without fields shows none, nothing may be made, removed or renamed), so
a family writes only the operations its nodes have. Listing calls get the ``Tree``
(the vault's records, nothing else: the tree's listing cache calls them); operations
get ``Parts``, every part of the mount, handed over by the builder.

The key a family is given is always of its own key type (``key_type``); its ``kind``
tells the family's kinds apart.
"""

from __future__ import annotations

import stat
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from vaultfs import errors
from vaultfs.bridge.tree.keys import NodeKey

if TYPE_CHECKING:
    from vaultfs.bridge.fs.attributes import Attr
    from vaultfs.bridge.fs.opening import Opened
    from vaultfs.bridge.fs.paths import DisplayPaths
    from vaultfs.bridge.nodes.parts import Parts
    from vaultfs.bridge.tree.tree import Tree

__all__ = ["Change", "Family", "Move", "NodeFamily"]


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

    def file_type(self, key: NodeKey) -> int:
        """The node's ``stat.S_IF*`` type bits, known without its attributes (a plain
        listing tells programs each entry's type)."""
        ...

    def is_local(self, key: NodeKey) -> bool:
        """A node of the mount alone, not of the vault: nothing announces its
        changes (short timeouts), and its name may outlive it on purpose."""
        ...

    async def children(self, tree: Tree, key: NodeKey) -> dict[str, NodeKey]:
        """Name -> child of directory ``key`` as the vault's records make it."""
        ...

    async def unlisted(self, tree: Tree, key: NodeKey, name: str) -> NodeKey | None:
        """A child ``name`` of ``key`` that listings leave out (reachable by name)."""
        ...

    def step(self, paths: DisplayPaths, key: NodeKey) -> tuple[NodeKey, str] | None:
        """(parent, name) of ``key`` for a path a user reads; None when not known."""
        ...

    async def attributes(self, parts: Parts, key: NodeKey, ino: int) -> Attr: ...

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


class Family:
    """A family's refusals: what a node answers for an operation it does not have."""

    key_type: ClassVar[type[NodeKey]] = NodeKey
    root_names: ClassVar[Mapping[str, NodeKey]] = {}
    root_listed: ClassVar[Mapping[str, NodeKey]] = {}
    #: the family's kinds that are files (every other kind is a directory)
    file_kinds: ClassVar[frozenset[str]] = frozenset()
    #: the family's kinds that are the mount's own
    local_kinds: ClassVar[frozenset[str]] = frozenset()
    #: the family's file kinds that are symbolic links
    link_kinds: ClassVar[frozenset[str]] = frozenset()

    def is_file(self, key: NodeKey) -> bool:
        return key.kind in self.file_kinds

    def file_type(self, key: NodeKey) -> int:
        if key.kind in self.link_kinds:
            return stat.S_IFLNK
        return stat.S_IFREG if key.kind in self.file_kinds else stat.S_IFDIR

    def is_local(self, key: NodeKey) -> bool:
        return key.kind in self.local_kinds

    async def children(self, tree: Tree, key: NodeKey) -> dict[str, NodeKey]:
        raise errors.NotADirectory(f"{key!r} is not a directory")

    async def unlisted(self, tree: Tree, key: NodeKey, name: str) -> NodeKey | None:
        return None

    def step(self, paths: DisplayPaths, key: NodeKey) -> tuple[NodeKey, str] | None:
        return None

    async def attributes(self, parts: Parts, key: NodeKey, ino: int) -> Attr:
        raise errors.NotFound(f"{key!r} has no attributes")

    async def open(self, parts: Parts, key: NodeKey, ino: int, flags: int) -> Opened:
        if not self.is_file(key):
            raise errors.IsADirectory("is a directory")
        parts.writable()
        raise errors.AccessDenied("only a document's latest source file is writable")

    async def setattr(self, parts: Parts, key: NodeKey, change: Change) -> None:
        # Times and modes of vault files are the vault's: changes are accepted and ignored.
        if change.size is not None:
            parts.writable()
            raise errors.AccessDenied("only a document's latest source file is writable")

    async def readlink(self, parts: Parts, key: NodeKey) -> str:
        raise errors.InvalidData("not a symbolic link")

    def lifecycle_of(self, key: NodeKey) -> int | None:
        return None

    async def fields(self, parts: Parts, key: NodeKey) -> dict[str, Any]:
        return {}

    async def set_field(self, parts: Parts, key: NodeKey, name: str, value: bytes | None) -> None:
        await parts.fields.set(None, None, await self.fields(parts, key), name, value)

    async def create(self, parts: Parts, parent: NodeKey, name: str, mode: int) -> NodeKey:
        raise errors.AccessDenied("files are made in type folders and documents only")

    def mkdir(self, parts: Parts, parent: NodeKey, name: str) -> NodeKey:
        raise errors.OperationNotPermitted("directories are made in type folders only")

    async def symlink(self, parts: Parts, parent: NodeKey, name: str, target: str) -> NodeKey:
        raise errors.OperationNotPermitted(
            "symbolic links are made in a document's relationships/<type>/ only"
        )

    async def unlink_in(self, parts: Parts, parent: NodeKey, name: str) -> None:
        key = await parts.overlay.child(parent, name)
        if key is None:
            raise errors.NotFound(name)
        await parts.registry.of(key).unlink(parts, key, name)

    async def unlink(self, parts: Parts, key: NodeKey, name: str) -> None:
        if self.is_file(key):
            raise errors.OperationNotPermitted(f"{name} cannot be removed")
        raise errors.IsADirectory(name)

    async def rmdir(self, parts: Parts, parent: NodeKey, key: NodeKey, name: str) -> None:
        if self.is_file(key):
            raise errors.NotADirectory(name)
        raise errors.OperationNotPermitted(f"{name} cannot be removed")

    async def rename(self, parts: Parts, move: Move) -> None:
        raise errors.OperationNotPermitted("only files and new folders can be renamed")
