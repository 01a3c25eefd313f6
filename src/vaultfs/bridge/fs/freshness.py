"""What the kernel keeps of the tree, and telling it to forget what changed.

The kernel is given long entry and attribute timeouts for every node the vault backs
(``Options.attr_timeout``), so a warm walk is answered from its caches. This module
keeps that honest: it knows which inodes of which document the kernel holds and under
which names (from lookups and directory listings), and when the index sees a document
change (the poller, a save or a field change through this mount, a background
check-in: they all end in ``DocumentIndex.on_change``) it

- makes the kernel forget the attributes of that document's inodes and of every
  folder at once (attributes only, which never waits for the kernel, so this is safe
  inside a request), so size, times and mode are read again;
- queues a check of the names the kernel holds for them; ``run`` asks the tree what
  each name stands for now and makes the kernel forget the names that no longer lead
  to the same node (renamed, moved, deleted). Names that still hold are left alone:
  forgetting them would unhash a directory that is someone's working directory.

A name that now leads nowhere is forgotten as deleted (``invalidate_entry`` with the
inode it held: ``fs.desktop.GoneNames`` has the kernel unhash it and raise
``IN_DELETE_SELF`` to the watchers of that inode and ``IN_DELETE`` to the watchers of
its folder), which is how a file manager's window learns that a document another
client deleted or renamed is gone. The same holds for a new file written into a
folder: once its document is made, its name (``General/x.txt``) leads nowhere (the
document is ``General/x/``), and ``new_file_done`` has the name checked; a file
dropped into a document's directory that became its attachment is forgotten by
``name_gone``. The documents checked are then given to ``on_names_checked``
(``fs.desktop.NewFolders``: a name that appeared, ``x/`` or a renamed document's new
name, is announced to the folder's watchers).

An answer's nodes (a search's folder, a view, their links: ``ANSWER_KINDS``) are kept
like the vault's, and their family says when one shows something else
(``answer_changed``): the kernel then forgets the names that no longer lead to the same
link (a link's node holds what it reads, so a link that stayed needs nothing).
Every index change makes it ask for the answers' folders' attributes again, as for the
folders, and drops what it keeps of every relationship's link (its text names its
target's directory, which any change may have moved; the kernel keeps a link's text
until it is told, ``cache_symlinks``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from itertools import islice

import trio

from vaultfs import errors
from vaultfs.bridge.fs.inodes import ROOT_INODE, InodeTable
from vaultfs.bridge.fs.options import MAX_INODES
from vaultfs.bridge.tree.keys import typed
from vaultfs.bridge.tree.nodes import DOC_DIRS, FIXED_DIRS, FOLDERS, Kind, NodeKey

__all__ = ["Freshness", "no_entry_invalidation", "no_invalidation"]

log = logging.getLogger(__name__)

# The names in a version's directories (``nodes.FIXED_DIRS``) are never checked: the
# kernel learns that a version went from its attributes (forgotten with the document's,
# then ENOENT); forgetting the name itself would break ``rm -r`` of a document, which
# removes a version directory after the removal of its file deleted the version.


#: names checked between two chances for the mount's requests to run
_BATCH = 500
#: names let go of at a time past ``max_inodes``, and the longest wait for the kernel
#: to forget most of them before the next ones
_LET_GO = 1000
_LET_GO_WAIT = 5.0
#: what a lookup raises when the directory asked is gone (any other failure leaves
#: the answer unknown)
_GONE = (
    errors.InvalidDocument,
    errors.MalformedUrl,
    errors.NotFound,
    errors.NotADirectory,
    errors.InsufficientAccess,
    FileNotFoundError,
)


def no_invalidation(ino: int) -> None:
    pass


def no_entry_invalidation(parent: int, name: str, deleted: int = 0) -> None:
    pass


class Freshness:
    def __init__(
        self,
        inodes: InodeTable,
        child: Callable[[NodeKey, str], Awaitable[NodeKey | None]],
        *,
        invalidate_attr: Callable[[int], None] = no_invalidation,
        invalidate_entry: Callable[[int, str, int], None] = no_entry_invalidation,
        invalidate_link: Callable[[int], None] = no_invalidation,
        generation: Callable[[], int] = lambda: 0,
        is_local: Callable[[NodeKey], bool] = lambda key: typed(key).is_local,
        max_inodes: int = MAX_INODES,
    ) -> None:
        """``child(parent key, name)``: the node a name stands for now;
        ``invalidate_attr``/``invalidate_entry``: tell the kernel to forget an inode's
        attributes / a name in a directory (``invalidate_entry(parent, name, deleted)``:
        ``deleted``, when not 0, the inode the name was given for, which is gone from
        there: watchers are told of a delete); ``invalidate_link``: forget a link's
        attributes and the target the kernel keeps of it; ``generation``: the index's generation,
        which moves once per batch of changes; ``is_local``: a node of the mount alone,
        whose changes nothing announces (its family's answer); ``max_inodes``: inodes
        the kernel may hold before the names it was given longest ago are let go."""
        self._inodes = inodes
        self._child = child
        self.invalidate_attr = invalidate_attr
        self._invalidate_entry = invalidate_entry
        self._invalidate_link = invalidate_link
        self._generation = generation
        self._is_local = is_local
        self._folders_told: int | None = None
        #: inode -> (parent inode, name) the kernel was last given it under. A node has
        #: one path at a time, so one name per inode (a name it had before is stale)
        self._names: dict[int, tuple[int, str]] = {}
        #: document id -> its inodes the kernel knows other than its own nodes, which
        #: the inode table keeps (``InodeTable.document_nodes``): its versions' and
        #: renditions' nodes (a few each: a tuple is the smallest container)
        self._by_doc: dict[int, tuple[int, ...]] = {}
        #: folder inodes the kernel knows (the root, types, subtypes, classifications)
        self._folders: set[int] = {ROOT_INODE}
        #: inodes the kernel knows by a name in a folder, the one given longest ago
        #: first: a document's name depends on its siblings' (`` [id]`` suffixes), so
        #: any change may change it; and past ``max_inodes`` the first are let go
        self._in_folders: dict[int, None] = {}
        self._max_inodes = max_inodes
        #: names let go of (``_let_go``) the kernel has not forgotten yet, and when
        self._letting_go: set[int] = set()
        self._let_go_at = 0.0
        #: inode -> content key of the estimated size the kernel was given
        self._estimated: dict[int, str] = {}
        #: content key -> its inodes (one or two: the source file and its version's
        #: file; a tuple is 160 bytes smaller than a set, for each document)
        self._estimated_by_key: dict[str, tuple[int, ...]] = {}
        #: the folders of answers the kernel knows (a search's folder, a view), and the
        #: links it knows in each: folder inode -> link inode -> name
        self._answers: dict[int, dict[int, str]] = {}
        #: link inode -> the answer's folder inode it was given in
        self._answer_of: dict[int, int] = {}
        #: answers' folders that show something else: folder inode -> its links now
        self._answers_changed: dict[int, Mapping[str, NodeKey]] = {}
        #: the links of relationships the kernel knows
        self._links: set[int] = set()
        #: documents whose names are to be checked by ``run``
        self._pending: set[int] = set()
        #: new files written into folders: inode -> (parent inode, name), until their
        #: name leads nowhere (their document was made) or the kernel forgets them
        self._new_files: dict[int, tuple[int, str]] = {}
        self._wake = trio.Event()
        #: called with the documents whose names ``check_names`` checked
        self.on_names_checked: list[Callable[[set[int]], Awaitable[None]]] = []

    def _document_of(self, key: NodeKey) -> int | None:
        """The document a node of the vault belongs to, None for every other node."""
        key = typed(key)
        if self._is_local(key) or not key.OF_DOCUMENT:
            return None
        return key.doc_id

    # --- what the kernel holds ---------------------------------------------------

    def seen(self, parent: int, name: str, key: NodeKey, ino: int) -> None:
        """The kernel was told ``name`` in ``parent`` is ``ino`` (lookup or listing).
        The mount's own nodes are not followed (short timeouts; a scratch file's name
        outlives it on purpose once it became a document, for a writer appending to it).
        """
        self.seen_all(parent, ((name, key, ino),))

    def seen_all(self, parent: int, named: Iterable[tuple[str, NodeKey, int]]) -> None:
        """``seen`` of each (name, key, inode) of a listing's page in ``parent``."""
        if len(self._inodes) > self._max_inodes:
            self._let_go()
        parent_key = self._inodes.key(parent)
        fixed_parent = parent_key is not None and parent_key.kind in FIXED_DIRS
        in_folder = parent in self._folders
        for name, node, ino in named:
            key = typed(node)
            kind = key.kind
            if kind == Kind.SCRATCH and in_folder:
                self._new_files[ino] = (parent, name)
            if self._is_local(key) or kind in key.SHARED_KINDS:
                continue
            if key.is_answer:
                self._seen_in_answer(parent, key, name, ino)
                continue
            if kind in key.LINK_KINDS:
                self._links.add(ino)
            if kind in FOLDERS:
                self._folders.add(ino)
            elif key.OF_DOCUMENT and not self._inodes.of_document(ino):
                inos = self._by_doc.get(key.doc_id, ())
                if ino not in inos:
                    self._by_doc[key.doc_id] = (*inos, ino)
            if kind in DOC_DIRS or fixed_parent:
                continue  # a name that never changes: nothing to check, nothing to keep
            before = self._names.get(ino)
            if before != (parent, name):
                self._names[ino] = (parent, name)
                if before is not None:  # the node moved: its old name leads nowhere now
                    self._invalidate_entry(*before, 0)
            if in_folder:
                self._in_folders.pop(ino, None)
                self._in_folders[ino] = None

    def _seen_in_answer(self, parent: int, key: NodeKey, name: str, ino: int) -> None:
        if not key.is_file:
            self._answers.setdefault(ino, {})
            return
        before = self._answer_of.get(ino)
        if before is not None and before != parent:
            self._answers.get(before, {}).pop(ino, None)
        self._answer_of[ino] = parent
        held = self._answers.setdefault(parent, {})
        was = held.get(ino)
        held[ino] = name
        if was is not None and was != name:  # renamed among its siblings: one name each
            self._invalidate_entry(parent, was, 0)

    def _let_go(self) -> None:
        """The kernel holds more than ``max_inodes`` of the mount's inodes (a walk of a
        folder of a million documents, ``find`` into each): it is made to forget the
        names of the documents in folders it was given longest ago, ``_LET_GO`` at a
        time (the kernel then forgets their inodes and those below them, and this mount
        with it), the next ones only once it forgot most of those: a notification waits
        for the requests in its folder, and a walk sends them faster than the kernel
        takes notifications. A program that holds one open or is in one keeps it; the
        name is looked up again when asked for."""
        now = time.monotonic()
        if len(self._letting_go) > _LET_GO // 4 and now < self._let_go_at + _LET_GO_WAIT:
            return  # the kernel has not forgotten the last ones yet
        self._letting_go.clear()  # (the rest were refused: in use, or gone already)
        self._let_go_at = now
        for ino in list(islice(self._in_folders, _LET_GO)):
            del self._in_folders[ino]
            dentry = self._names.get(ino)
            if dentry is not None:
                self._letting_go.add(ino)
                self._invalidate_entry(*dentry, 0)

    def name_of(self, ino: int) -> tuple[int, str] | None:
        """(parent inode, name) the kernel was last given ``ino`` under, if it holds it."""
        return self._names.get(ino)

    def forgotten(self, ino: int, key: NodeKey) -> None:
        """The kernel dropped its last reference to ``ino``."""
        self._names.pop(ino, None)
        self._new_files.pop(ino, None)
        self._folders.discard(ino)
        self._in_folders.pop(ino, None)
        self._letting_go.discard(ino)
        self._answers.pop(ino, None)
        self._links.discard(ino)
        folder = self._answer_of.pop(ino, None)
        if folder is not None:
            self._answers.get(folder, {}).pop(ino, None)
        self.exact(ino)
        doc_id = self._document_of(key)
        if doc_id is not None:
            inos = self._by_doc.get(doc_id, ())
            if ino in inos:
                left = tuple(i for i in inos if i != ino)
                if left:
                    self._by_doc[doc_id] = left
                else:
                    del self._by_doc[doc_id]

    # --- estimated sizes ---------------------------------------------------------

    def estimated(self, ino: int, content_key: str) -> None:
        """The kernel was given an estimate of ``ino``'s size, the size of content
        ``content_key`` once known."""
        self._estimated[ino] = content_key
        inos = self._estimated_by_key.get(content_key, ())
        if ino not in inos:
            self._estimated_by_key[content_key] = (*inos, ino)

    def is_estimated(self, ino: int) -> bool:
        return ino in self._estimated

    def exact(self, ino: int) -> bool:
        """``ino``'s size is exact from now on; whether the kernel held an estimate."""
        content_key = self._estimated.pop(ino, None)
        if content_key is None:
            return False
        left = tuple(i for i in self._estimated_by_key.get(content_key, ()) if i != ino)
        if left:
            self._estimated_by_key[content_key] = left
        else:
            self._estimated_by_key.pop(content_key, None)
        return True

    def size_known(self, content_key: str) -> None:
        """The content cache learned ``content_key``'s exact size: the kernel forgets
        the estimates it holds of it."""
        for ino in self._estimated_by_key.get(content_key, ()):
            self.exact(ino)
            self.invalidate_attr(ino)

    # --- changes -----------------------------------------------------------------

    def document_changed(self, doc_id: int) -> None:
        """The index saw ``doc_id`` change, appear or leave (an ``on_change`` callback)."""
        for ino in (*self._inodes.document_nodes(doc_id), *self._by_doc.get(doc_id, ())):
            self.invalidate_attr(ino)
        if self._folders_told != self._generation():
            # A folder's mtime is its newest document's: once per batch of changes.
            self._folders_told = self._generation()
            for ino in (*self._folders, *self._answers):
                self.invalidate_attr(ino)
            for ino in self._links:
                self._invalidate_link(ino)
        self._pending.add(doc_id)
        self._wake.set()

    def answer_changed(self, folder: NodeKey, links: Mapping[str, NodeKey]) -> None:
        """A search's folder or a view shows other names or targets than the kernel
        was given (its family's ``on_changed``): ``run`` makes it forget them."""
        ino = self._inodes.held(folder)
        if ino is not None and self._answers.get(ino):
            self._answers_changed[ino] = links
            self._wake.set()

    def _forget_answers(self) -> None:
        """The names in the answers that changed that no longer stand for the link they
        were given for (or for none): forgotten as deleted."""
        changed, self._answers_changed = self._answers_changed, {}
        for folder, links in changed.items():
            held = self._answers.get(folder, {})
            for ino, name in list(held.items()):
                if links.get(name) != self._inodes.key(ino):
                    del held[ino]
                    self._answer_of.pop(ino, None)
                    self._invalidate_entry(folder, name, ino)

    def name_gone(self, parent: NodeKey, name: str, key: NodeKey) -> None:
        """A name of the mount's own left its directory by itself: a file dropped into
        a document's directory is that document's attachment now (``attachments/``).
        The kernel forgets the name as deleted, so that a window showing the directory
        sees the file go (nothing of the mount's own is followed in ``seen``, and a
        document's directory holds no names that ``check_names`` looks at)."""
        parent_ino = self._inodes.held(parent)
        ino = self._inodes.held(key)
        if parent_ino is not None and ino is not None:
            self._invalidate_entry(parent_ino, name, ino)

    def new_file_done(self) -> None:
        """A new file's last writer let go of it or its fields were set: its document
        may have been made, which takes its name in the folder away."""
        if self._new_files:
            self._wake.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Check the names of changed documents as they come (a task of the mount)."""
        task_status.started()
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            try:
                await self.check_names()
            except Exception:  # a bug here must not end the mount: the timeouts still run out
                log.exception("checking changed names failed")

    async def check_names(self) -> None:
        """Make the kernel forget each name of a changed document (and each name in
        a folder) that no longer stands for the node it was given for."""
        self._forget_answers()
        pending, self._pending = self._pending, set()
        inos = set(self._in_folders) | self._folders
        for doc_id in pending:
            inos.update(self._inodes.document_nodes(doc_id), self._by_doc.get(doc_id, ()))
        for count, ino in enumerate(sorted(inos)):
            if count % _BATCH == _BATCH - 1:
                await trio.lowlevel.checkpoint()  # a big folder: let requests in between
            key = self._inodes.key(ino)
            if key is None:
                continue
            dentry = self._names.get(ino)
            if dentry is None:
                continue
            now = await self._now(*dentry, key)
            if now != key:
                if self._names.get(ino) == dentry:  # not given a new name meanwhile
                    del self._names[ino]
                self._invalidate_entry(*dentry, ino if now is None else 0)
        await self._check_new_files()
        if pending:
            for on_checked in self.on_names_checked:
                await on_checked(pending)

    async def _check_new_files(self) -> None:
        """Names of new files in folders that lead nowhere now (their document was
        made, or they were never made and are gone): forgotten as deleted."""
        for ino, dentry in list(self._new_files.items()):
            key = self._inodes.key(ino)
            if key is None:
                continue
            now = await self._now(*dentry, key)
            if now is None and self._new_files.get(ino) == dentry:
                del self._new_files[ino]
                self._invalidate_entry(*dentry, ino)

    async def _now(self, parent: int, name: str, key: NodeKey) -> NodeKey | None:
        """What ``name`` in ``parent``, given for ``key``, stands for now: ``key``
        when unknown or unchanged, None when it leads nowhere."""
        parent_key = self._inodes.key(parent)
        if parent_key is None:
            return key  # the kernel forgot the directory, and its entries with it
        if parent_key.kind in FIXED_DIRS:
            return key
        try:
            return await self._child(parent_key, name)
        except _GONE:
            return None  # the directory itself is gone
        except (errors.VaultError, OSError):
            # Unknown for now (the vault away, the call budget spent): the next change
            # checks again. Forgetting a name that still holds would make the kernel
            # drop what it holds below it, to be looked up again on a spent budget.
            return key
