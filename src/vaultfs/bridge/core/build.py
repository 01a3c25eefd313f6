"""The one builder of a mount's daemon: every part, made once, in dependency order.

``build_daemon`` makes the document index and the tree over a client, the content
cache, the write-back spool (with its uploads), the node families and their registry,
the overlay of names, the write side (scratch files, editing, new documents, fields,
links), the read-ahead, the pins (documents kept for offline), the status and the
file system, handing each part what it
needs at construction: no part builds another, nothing reaches the client through
another part, and the callbacks between parts (the index's and the content cache's
changes told to the kernel, a check-in or upload shown in the tree) are subscribed
here. ``run_mount`` calls it (so do the tests, with a fake vault behind the client).
The families are registered in ``families``, one line a family.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vaultfs.bridge.content.blobcache import BlobCache
from vaultfs.bridge.content.pins import Pins, pins_file_name
from vaultfs.bridge.content.prefetch import Prefetcher
from vaultfs.bridge.content.sources import Contents
from vaultfs.bridge.fs.attributes import Attributes
from vaultfs.bridge.fs.desktop import GoneNames, NameEvents, NewFolders
from vaultfs.bridge.fs.families import Parts, Writing
from vaultfs.bridge.fs.filesystem import FileSystem
from vaultfs.bridge.fs.freshness import Freshness, no_entry_invalidation, no_invalidation
from vaultfs.bridge.fs.handles import HandleTable
from vaultfs.bridge.fs.inodes import InodeTable
from vaultfs.bridge.fs.new_names import NameRules
from vaultfs.bridge.fs.opening import Opener
from vaultfs.bridge.fs.options import Options
from vaultfs.bridge.fs.overlay import Overlay
from vaultfs.bridge.fs.paths import DisplayPaths
from vaultfs.bridge.fs.status import StatusReport
from vaultfs.bridge.lifecycle.actions import LifecycleActions
from vaultfs.bridge.lifecycle.attributes import LifeAttributes
from vaultfs.bridge.lifecycle.events import DocumentEvents
from vaultfs.bridge.nodes.attachments import Attachments
from vaultfs.bridge.nodes.control import Control
from vaultfs.bridge.nodes.documents import Documents
from vaultfs.bridge.nodes.editor_locks import EditorLocksShown
from vaultfs.bridge.nodes.folders import Folders
from vaultfs.bridge.nodes.hidden import HiddenLists
from vaultfs.bridge.nodes.local import Local
from vaultfs.bridge.nodes.registry import Registry
from vaultfs.bridge.nodes.relationships import Relationships
from vaultfs.bridge.nodes.renditions import Renditions
from vaultfs.bridge.nodes.search import AnswerChanged, Search
from vaultfs.bridge.nodes.sources import Sources
from vaultfs.bridge.nodes.versions import Versions
from vaultfs.bridge.tree.catalog import TypeCatalog
from vaultfs.bridge.tree.index import DocumentIndex
from vaultfs.bridge.tree.index_store import IndexStore
from vaultfs.bridge.tree.keys import ROOT
from vaultfs.bridge.tree.search_results import SearchResults
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.tree.walks import WalkShare
from vaultfs.bridge.write.creating import Creator, show_created
from vaultfs.bridge.write.deletions import Deletions
from vaultfs.bridge.write.drops import Drops
from vaultfs.bridge.write.editing import Editing, show_check_in, show_lease
from vaultfs.bridge.write.editor_locks import EditorLocks
from vaultfs.bridge.write.fields import FieldEditor, show_field_set
from vaultfs.bridge.write.files_in import FilesIn, show_upload
from vaultfs.bridge.write.lease import Leases
from vaultfs.bridge.write.linking import Linker
from vaultfs.bridge.write.new_documents import NewDocuments
from vaultfs.bridge.write.new_fields import NewFields
from vaultfs.bridge.write.scratch import Scratch, empty_private_dir
from vaultfs.bridge.write.spool import store as spool_store
from vaultfs.bridge.write.spool.creates import Creates
from vaultfs.bridge.write.spool.field_sets import FieldSets
from vaultfs.bridge.write.spool.queue import WorkQueue
from vaultfs.bridge.write.spool.spool import Spool
from vaultfs.bridge.write.spool.uploads import Uploads
from vaultfs.client import CHECK_INS, Reach, VaultApi

__all__ = ["Daemon", "SpoolSettings", "build_daemon", "families"]


@dataclass(frozen=True)
class SpoolSettings:
    """Where the write-back spool keeps its files, and how it retries."""

    directory: Path
    #: the signed-in user (a lock of theirs is this mount's own)
    user_id: int | None = None
    retry_initial: float = 1.0
    #: whether files written into renditions/ and attachments/ are uploaded
    uploads: bool = True


@dataclass(frozen=True)
class Daemon:
    """What runs a mount: the parts with background work, and the file system."""

    index: DocumentIndex
    tree: Tree
    blobs: BlobCache
    #: None on a read-only mount
    spool: Spool | None
    filesystem: FileSystem
    #: the check-outs of editors' lock files and WebDAV locks, and the lock files shown
    #: for check-outs held elsewhere (the WebDAV front's LOCK takes them here)
    editor_locks: EditorLocks
    #: files dropped into documents' directories waiting out their grace (None on a
    #: read-only mount)
    drops: Drops | None
    #: what new files become; its ``run`` is a background task of the mount (the
    #: drops' grace, the files that waited for the vault)
    new_documents: NewDocuments
    #: the documents kept for offline; its ``run`` (their downloads) is a background
    #: task of the mount
    pins: Pins


def families(
    spool_dir: Path | None,
    searches: SearchResults | None = None,
    held_here: Callable[[int], bool] | None = None,
    *,
    lock_files: bool = True,
    answers_changed: list[AnswerChanged] | None = None,
) -> Registry:
    """The node families, one line each (``bridge.nodes``). ``searches``: what the
    search folders ask (None: a registry that only tells the families apart, whose
    searches fail); ``held_here``: whether this client holds a document checked out
    (``write.lease``: a save, an editor's lock file, a WebDAV lock): no lock file
    naming a holder is shown for it; ``lock_files``: a check-out held
    elsewhere is shown as an editor's lock file at all (``nodes.documents``);
    ``answers_changed``: told when a search's folder or a view shows something else."""
    return Registry(
        [
            Folders(),
            Documents(held_here or (lambda doc_id: False), lock_files=lock_files),
            HiddenLists(),
            EditorLocksShown(),
            Sources(),
            Versions(),
            Renditions(),
            Attachments(),
            Relationships(),
            Control(spool_dir),
            Local(),
            Search(searches, answers_changed),
        ]
    )


def _spool(
    client: VaultApi, tree: Tree, blobs: BlobCache, leases: Leases, settings: SpoolSettings
) -> Spool:
    """The write-back spool; every check-in, upload, create and field set it makes is
    shown in the tree at once (``show_check_in``, ``show_upload``, ``show_created``,
    ``show_field_set``), as is every check-out's beginning and end (``show_lease``)."""
    leases.shown = functools.partial(show_lease, tree)
    # One queue of work for the check-ins, the uploads, the creates and the field
    # sets, with the check-ins' waits.
    queue = WorkQueue(leases.retry, client.reach)
    new_documents = Creates(
        settings.directory, client, queue=queue, on_created=functools.partial(show_created, tree)
    )
    field_sets = FieldSets(
        settings.directory, client, queue=queue, on_applied=functools.partial(show_field_set, tree)
    )
    uploads = None
    if settings.uploads:
        on_uploaded = functools.partial(show_upload, tree)
        uploads = Uploads(settings.directory, client, queue=queue, on_uploaded=on_uploaded)
    return Spool(
        settings.directory,
        client,
        leases=leases,
        queue=queue,
        retry_initial=settings.retry_initial,
        on_checked_in=functools.partial(show_check_in, tree, blobs),
        uploads=uploads,
        new_documents=new_documents,
        field_sets=field_sets,
    )


def build_daemon(
    client: VaultApi,
    options: Options,
    *,
    content_dir: Path,
    cache_size: int,
    spool: SpoolSettings | None = None,
    status_extra: Callable[[], dict[str, Any]] = dict,
    invalidate_attr: Callable[[int], None] = no_invalidation,
    invalidate_entry: Callable[[int, str, int], None] = no_entry_invalidation,
    invalidate_link: Callable[[int], None] = no_invalidation,
    name_events: NameEvents | None = None,
    index_store: IndexStore | None = None,
    lock_files: bool = True,
    keep_names: bool = False,
) -> Daemon:
    """The daemon of a mount over ``client``; without a ``spool`` nothing can be
    written (a read-only mount). ``status_extra``: what the mount adds to the status
    file; ``invalidate_attr``/``invalidate_entry``: tell the kernel to forget an
    inode's attributes / a name in a directory (never wait); ``invalidate_link``: a
    link's attributes and the target the kernel keeps (never waits); ``name_events``: raise
    inotify events for names that appear or go by themselves (``fs.desktop``; None
    without a kernel); ``index_store``: where the document index is kept (None: in
    memory); ``lock_files``: a document checked out elsewhere lists LibreOffice's lock
    file naming the holder (the mount; a WebDAV front's clients learn of a check-out
    from LOCK instead); ``keep_names``: a new file's name stays its writer's until
    the writer's lock on it ends and a grace after (a WebDAV front:
    ``write.new_documents``)."""
    started = time.time()
    index = DocumentIndex(client, store=index_store)
    # A vault that is back (offline no more) is caught up with at once.
    client.reach.on_change.append(lambda state: index.poll_now() if state == Reach.ONLINE else None)
    catalog = TypeCatalog(client, kept=index.store)
    # A search's answer is kept for the index's poll interval, while the index is
    # unchanged.
    # What only a walk needs of the vault is paid from a share of its budget.
    walks = WalkShare(options.walk_calls, options.walk_burst)
    searches = SearchResults(
        client, lambda: index.generation, ttl=options.poll_interval, walks=walks
    )
    # Every check-out of this client, whatever takes it (a save, an editor's lock
    # file, a WebDAV lock): one owner, which the spool and the families ask.
    leases = None
    if spool is not None:
        retry = dataclasses.replace(CHECK_INS, base_delay=spool.retry_initial)
        leases = Leases(spool.directory, client, user_id=spool.user_id, retry=retry)
    answers_changed: list[AnswerChanged] = []
    registry = families(
        spool.directory if spool is not None else None,
        searches,
        leases.held_here if leases is not None else None,
        lock_files=lock_files,
        answers_changed=answers_changed,
    )
    tree = Tree(client, index, catalog, registry, walks)
    blobs = BlobCache(content_dir, cache_size)
    contents = Contents(tree, client)
    # The documents kept for offline: their latest content is never evicted, and a
    # new version the index learns of is downloaded in the background.
    pins = Pins(
        content_dir / pins_file_name(options.url, options.user),
        tree,
        blobs,
        contents,
        identity={"vault_url": options.url, "user": options.user},
    )
    blobs.keeps = pins.keeps
    index.on_change.append(pins.document_changed)
    the_spool = None
    if spool is not None and leases is not None:
        the_spool = _spool(client, tree, blobs, leases, spool)
    scratch = creator = files_in = None
    if the_spool is not None:
        # The spool has rescued what an earlier daemon left to become documents.
        scratch = Scratch(empty_private_dir(the_spool.directory / spool_store.SCRATCH))
        creator = Creator(tree, blobs, the_spool)
        files_in = FilesIn(tree, client, blobs, contents, the_spool.uploads)
    editing = Editing(tree, blobs, contents, the_spool)
    overlay = Overlay(tree, scratch, allow_delete=options.allow_delete)
    fields = FieldEditor(tree, client, the_spool.field_sets if the_spool is not None else None)
    new_documents = NewDocuments(
        tree,
        editing,
        overlay,
        NewFields(),
        creator=creator,
        files_in=files_in,
        fields=fields,
        keep_names=keep_names,
    )
    inodes = InodeTable(ROOT)
    handles = HandleTable()
    paths = DisplayPaths(tree, registry.step, lambda: scratch, overlay.resolve, inodes)
    freshness = Freshness(
        inodes,
        overlay.child,
        invalidate_attr=invalidate_attr,
        invalidate_entry=GoneNames(
            paths, inodes, registry.is_file, name_events, invalidate_entry
        ).forget,
        invalidate_link=invalidate_link,
        generation=lambda: index.generation,
        is_local=registry.is_local,
        max_inodes=options.max_inodes,
    )
    # Every change the index learns of (poll, save, field change, check-in) and every
    # exact size the content cache learns is pushed to the kernel's caches, and the
    # names that appeared are announced to the folders' watchers.
    index.on_change.append(freshness.document_changed)
    answers_changed.append(freshness.answer_changed)
    # A dropped file that became its document's attachment goes from the document's
    # directory (its watchers are told), as a pasted file that became a document does.
    new_documents.on_drop_taken.append(
        lambda dropped: freshness.name_gone(dropped.parent, dropped.name, dropped.key)
    )
    index.on_relist.append(freshness.document_changed)
    blobs.on_size.append(freshness.size_known)
    if name_events is not None:
        new_folders = NewFolders(overlay, paths, inodes, freshness.name_of, name_events)
        freshness.on_names_checked.append(new_folders.documents_changed)
    editor_locks = EditorLocks(tree, client, leases)
    report = StatusReport(
        options,
        client,
        index,
        blobs,
        editing,
        new_documents,
        inodes,
        paths,
        walks,
        pins,
        started=started,
        extra=status_extra,
    )
    parts = Parts(
        options=options,
        tree=tree,
        registry=registry,
        overlay=overlay,
        attributes=Attributes(
            tree, blobs, contents, options, started=started, estimated=freshness.estimated
        ),
        opener=Opener(contents, blobs, handles, new_documents, freshness, invalidate_attr),
        freshness=freshness,
        prefetch=Prefetcher(tree, blobs, contents, client),
        write=Writing(
            editing=editing,
            new_documents=new_documents,
            fields=fields,
            deletions=Deletions(tree, client),
            links=Linker(tree, client, options.mountpoint),
            editor_locks=editor_locks,
        ),
        life=LifeAttributes(LifecycleActions(tree, client), DocumentEvents(tree, client), leases),
        report=report,
        pins=pins,
    )
    filesystem = FileSystem(parts, inodes, handles, blobs, NameRules(catalog))
    return Daemon(
        index,
        tree,
        blobs,
        the_spool,
        filesystem,
        editor_locks,
        new_documents.drops,
        new_documents,
        pins,
    )
