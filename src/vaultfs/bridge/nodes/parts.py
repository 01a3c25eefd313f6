"""The parts of a mount a node family's operations use, handed over by the builder.

``Parts`` is made once (``daemon.build``) and given to every family operation; a
family takes what it needs from it and keeps nothing. It also holds the two checks
every writing operation makes first (``writable``, ``may_create``).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vaultfs import errors

if TYPE_CHECKING:
    from vaultfs.bridge.content.blobcache import BlobCache
    from vaultfs.bridge.content.prefetch import Prefetcher
    from vaultfs.bridge.content.sources import Contents
    from vaultfs.bridge.fs.attributes import Attributes
    from vaultfs.bridge.fs.freshness import Freshness
    from vaultfs.bridge.fs.handles import HandleTable
    from vaultfs.bridge.fs.opening import Opener
    from vaultfs.bridge.fs.options import Options
    from vaultfs.bridge.fs.overlay import Overlay
    from vaultfs.bridge.fs.status import StatusReport
    from vaultfs.bridge.lifecycle.attributes import LifeAttributes
    from vaultfs.bridge.nodes.registry import Registry
    from vaultfs.bridge.tree.tree import Tree
    from vaultfs.bridge.write.editing import Editing
    from vaultfs.bridge.write.fields import FieldEditor
    from vaultfs.bridge.write.linking import Linker
    from vaultfs.bridge.write.new_documents import NewDocuments
    from vaultfs.client import VaultClient

__all__ = ["Parts", "is_writing"]

log = logging.getLogger(__name__)


def is_writing(flags: int) -> bool:
    """Whether open() ``flags`` write (or truncate)."""
    return bool(flags & os.O_ACCMODE != os.O_RDONLY or flags & os.O_TRUNC)


@dataclass(frozen=True)
class Parts:
    options: Options
    client: VaultClient
    tree: Tree
    registry: Registry
    blobs: BlobCache
    contents: Contents
    overlay: Overlay
    editing: Editing
    new_documents: NewDocuments
    fields: FieldEditor
    links: Linker
    life: LifeAttributes
    report: StatusReport
    attributes: Attributes
    freshness: Freshness
    handles: HandleTable
    opener: Opener
    prefetch: Prefetcher

    def writable(self) -> None:
        if self.options.read_only:
            raise errors.ReadOnly("mounted read-only")

    def may_create(self, name: str) -> None:
        """Refuse a new document now, not at close, when the vault said (at mount time)
        that this user may not create documents."""
        if not self.options.may_create:
            log.warning("new %r refused: this user may not create documents", name)
            raise errors.AccessDenied("this user may not create documents")
