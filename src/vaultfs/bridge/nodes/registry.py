"""The registry of node families: which family handles a key, by the key's type.

Owns the one dispatch on a node's kind: ``Registry.of(key)`` finds the family of the
key's type (a plain tuple is made typed first, ``keys.typed``). It also answers the
tree's listing calls for every family (``tree.Tree`` takes it as its ``Lister``),
including the names at the root that lead to a family's nodes without being listed
(``.vaultfs``) and those listed there after the vault's folders (``Favorites``).
It is the file system's ``fs.families.Families``, and gives ``fs.paths`` each node's
parent (``step``). ``families`` in ``core.build`` registers one family a line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from vaultfs.bridge.fs.families import NodeFamily
from vaultfs.bridge.tree.keys import ROOT, NodeKey, typed

if TYPE_CHECKING:
    from vaultfs.bridge.fs.paths import DisplayPaths
    from vaultfs.bridge.tree.tree import Tree

__all__ = ["Registry"]


class Registry:
    def __init__(self, families: Iterable[NodeFamily]) -> None:
        self._families: dict[type[NodeKey], NodeFamily] = {}
        root_names: dict[str, NodeKey] = {}
        root_listed: dict[str, NodeKey] = {}
        for family in families:
            if family.key_type in self._families:
                raise ValueError(f"{family.key_type.__name__} has a family already")
            self._families[family.key_type] = family
            root_names.update(family.root_names)
            root_listed.update(family.root_listed)
        #: names at the root that listings leave out (``.vaultfs``)
        self.root_names: Mapping[str, NodeKey] = root_names
        #: names at the root listed after the vault's (``Favorites``)
        self.root_listed: Mapping[str, NodeKey] = root_listed

    @property
    def families(self) -> tuple[NodeFamily, ...]:
        """The registered families, in their order of registration."""
        return tuple(self._families.values())

    def of(self, key: tuple[str | int, ...]) -> NodeFamily:
        """The family of node ``key``."""
        return self._families[type(typed(key))]

    def is_file(self, key: NodeKey) -> bool:
        key = typed(key)
        return self._families[type(key)].is_file(key)

    def is_local(self, key: NodeKey) -> bool:
        key = typed(key)
        return self._families[type(key)].is_local(key)

    def step(self, paths: DisplayPaths, key: NodeKey) -> tuple[NodeKey, str] | None:
        """(parent, name) of ``key`` for a path (``fs.paths.DisplayPaths``' step)."""
        key = typed(key)
        return self.of(key).step(paths, key)

    # --- the tree's listings (``tree.Lister``) ---------------------------------------

    async def children(self, tree: Tree, key: NodeKey) -> Mapping[str, NodeKey]:
        key = typed(key)
        return await self.of(key).children(tree, key)

    async def unlisted(self, tree: Tree, key: NodeKey, name: str) -> NodeKey | None:
        if key == ROOT and name in self.root_names:
            return self.root_names[name]
        key = typed(key)
        return await self.of(key).unlisted(tree, key, name)
