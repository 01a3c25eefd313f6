"""The one builder of a mount's layers: everything below the FUSE operations.

``build_filesystem`` makes the write side (spool parts, scratch files, editing, names,
fields), the read-ahead and the file system from the tree and content cache, handing
each part the client and the callbacks it needs at construction: no part builds
another, and nothing is attached afterwards. ``run_mount`` calls it (so do the tests,
with a fake vault behind the client).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from vaultfs.bridge.content.blobcache import BlobCache
from vaultfs.bridge.content.prefetch import Prefetcher
from vaultfs.bridge.fs.filesystem import FileSystem, no_entry_invalidation, no_invalidation
from vaultfs.bridge.fs.options import Options
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.write.creating import Creator
from vaultfs.bridge.write.editing import Editing
from vaultfs.bridge.write.fields import FieldEditor
from vaultfs.bridge.write.files_in import FilesIn
from vaultfs.bridge.write.namespace import Namespace
from vaultfs.bridge.write.scratch import Scratch, empty_private_dir
from vaultfs.bridge.write.spool import store as spool_store

if TYPE_CHECKING:
    from vaultfs.bridge.write.spool.spool import Spool

__all__ = ["build_filesystem"]


def build_filesystem(
    tree: Tree,
    blobs: BlobCache,
    options: Options | None = None,
    *,
    spool: Spool | None = None,
    status_extra: Callable[[], dict[str, Any]] = dict,
    invalidate_attr: Callable[[int], None] = no_invalidation,
    invalidate_entry: Callable[[int, str, int], None] = no_entry_invalidation,
) -> FileSystem:
    """The file system over ``tree`` and ``blobs``; without a ``spool`` nothing can be
    written (a read-only mount)."""
    options = options or Options()
    client = tree.client
    scratch = creator = files_in = None
    if spool is not None:
        # The spool has rescued what an earlier daemon left to become documents.
        scratch = Scratch(empty_private_dir(spool.directory / spool_store.SCRATCH))
        creator = Creator(tree, client, blobs, spool)
        files_in = FilesIn(tree, blobs, spool.uploads)
    editing = Editing(tree, blobs, spool)
    namespace = Namespace(
        tree,
        client,
        blobs,
        editing,
        spool,
        scratch=scratch,
        creator=creator,
        allow_delete=options.allow_delete,
        files_in=files_in,
    )
    return FileSystem(
        tree,
        blobs,
        options,
        editing=editing,
        namespace=namespace,
        fields=FieldEditor(tree, client),
        prefetch=Prefetcher(tree, blobs),
        status_extra=status_extra,
        invalidate_attr=invalidate_attr,
        invalidate_entry=invalidate_entry,
    )
