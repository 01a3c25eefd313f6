"""The refusals a node family starts from.

``Family`` is a base class of the file system's ``fs.families.NodeFamily`` whose
every operation answers as a node that does not have it (a file has no children, a
directory cannot be opened, a node without fields shows none, nothing may be made,
removed or renamed), so a family writes only the operations its nodes have. Listing
calls get the ``Tree`` (the vault's records, nothing else: the tree's listing cache
calls them); operations get ``fs.families.Parts``, the parts of the mount, handed
over by the builder.

The key a family is given is always of its own key type (``key_type``); its ``kind``
tells the family's kinds apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from vaultfs import errors
from vaultfs.bridge.tree.keys import NodeKey

if TYPE_CHECKING:
    from vaultfs.bridge.fs.attributes import Attr
    from vaultfs.bridge.fs.families import Change, Move, Parts
    from vaultfs.bridge.fs.opening import Opened
    from vaultfs.bridge.fs.paths import DisplayPaths
    from vaultfs.bridge.tree.tree import Tree

__all__ = ["Family"]


class Family:
    """A family's refusals: what a node answers for an operation it does not have."""

    key_type: ClassVar[type[NodeKey]] = NodeKey
    root_names: ClassVar[Mapping[str, NodeKey]] = {}
    root_listed: ClassVar[Mapping[str, NodeKey]] = {}

    def is_file(self, key: NodeKey) -> bool:
        return key.is_file  # the key type's ``FILE_KINDS``

    def is_local(self, key: NodeKey) -> bool:
        return key.is_local  # the key type's ``LOCAL_KINDS``

    async def children(self, tree: Tree, key: NodeKey) -> Mapping[str, NodeKey]:
        raise errors.NotADirectory(f"{key!r} is not a directory")

    async def unlisted(self, tree: Tree, key: NodeKey, name: str) -> NodeKey | None:
        return None

    def shared_names(self) -> Mapping[str, NodeKey]:
        return {}

    def step(self, paths: DisplayPaths, key: NodeKey) -> tuple[NodeKey, str] | None:
        return None

    async def attributes(self, parts: Parts, key: NodeKey, ino: int) -> Attr:
        raise errors.NotFound(f"{key!r} has no attributes")

    async def listed_attributes(
        self, parts: Parts, keys: list[NodeKey], inos: list[int]
    ) -> list[Attr | None]:
        found: list[Attr | None] = []
        for key, ino in zip(keys, inos, strict=True):
            try:
                found.append(await self.attributes(parts, key, ino))
            except (errors.InvalidDocument, errors.NotFound, FileNotFoundError):
                found.append(None)  # left the vault since it was listed
        return found

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
        await parts.write.fields.set(None, None, await self.fields(parts, key), name, value)

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
