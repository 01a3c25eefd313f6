"""The names of the tree as the user changes them: create, mkdir, rename, unlink, rmdir.

Owns what a name means beyond the vault's own tree (``tree``): scratch files and new
folders (``scratch``), lost+found under ``.vaultfs``, entries hidden by an ``rm -r``
walk or by a rename of the source file, and the node aliases a rename or a new
document leaves behind (the kernel keeps the inode it knew under the new name). The
decisions, written down for users in docs/writing.md:

* Any new name in a document directory is a scratch file; renaming one over the
  source file checks its content in (lock, upload, unlock) before rename() returns.
* Renaming the source file away (vim's ``name~`` backup) keeps a scratch copy of its
  content under the new name and hides the source name until a file is created under
  it again (which checks out the document, starting empty) or a minute passes.
* A new file in a type/subtype/classification folder, or in a directory made there
  with mkdir, becomes a new document when its last writer closes it, unless its name
  is a temporary one (``scratch.is_temporary_name``).
* Deleting (``-o allow_delete``): unlink of a version file deletes that version (the
  only version of a document cannot be: it is hidden, and goes with the document);
  unlink of other files of a document and rmdir of its subdirectories hide them for a
  minute, so ``rm -r`` can walk the directory; rmdir of the document directory deletes
  the document. Without the option all of these are EPERM.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from vaultfs import errors
from vaultfs.bridge.content.blobcache import BlobCache
from vaultfs.bridge.content.sources import content_of
from vaultfs.bridge.tree import nodes
from vaultfs.bridge.tree.filenames import unescape
from vaultfs.bridge.tree.nodes import DOCUMENT_DIRS, FOLDERS, LOST_AND_FOUND, Kind, NodeKey
from vaultfs.bridge.tree.tree import Tree, parse_version
from vaultfs.bridge.write.creating import Creator
from vaultfs.bridge.write.editing import Editing
from vaultfs.bridge.write.files_in import FilesIn
from vaultfs.bridge.write.new_fields import NewFields
from vaultfs.bridge.write.scratch import (
    NewFolder,
    Scratch,
    ScratchFile,
    is_temporary_name,
    is_upload,
    makes_document,
)
from vaultfs.bridge.write.spool import lost
from vaultfs.bridge.write.spool import store as spool_store
from vaultfs.client import VaultClient

if TYPE_CHECKING:
    from vaultfs.bridge.write.spool.spool import Spool

__all__ = ["Namespace"]

log = logging.getLogger(__name__)

#: how long an entry hidden by unlink/rmdir or a rename of the source file stays hidden
_HIDE_FOR = 60.0


class Namespace:
    def __init__(
        self,
        tree: Tree,
        client: VaultClient,
        blobs: BlobCache,
        editing: Editing,
        spool: Spool | None,
        *,
        scratch: Scratch | None,
        creator: Creator | None,
        allow_delete: bool,
        files_in: FilesIn | None = None,
    ) -> None:
        self.tree = tree
        self.client = client
        self.blobs = blobs
        self.editing = editing
        self.spool = spool
        self.allow_delete = allow_delete
        #: scratch files and new documents: None on a mount without a spool
        self.scratch = scratch
        self.creator = creator
        self.new_fields = NewFields()
        #: files written into renditions/ and attachments/ (None: a read-only mount)
        self.files_in = files_in
        #: node -> monotonic time until which it is left out of its directory
        self._hidden: dict[NodeKey, float] = {}
        #: node the kernel still knows -> the node it now stands for
        self.aliases: dict[NodeKey, NodeKey] = {}
        #: versions deleted by unlink of their file: (doc id, major, minor)
        self._deleted: set[tuple[int, int, int]] = set()
        #: new documents (or uploads) a last close started making, not done yet
        self.in_flight = 0

    # --- names -------------------------------------------------------------------

    def resolve(self, key: NodeKey) -> NodeKey:
        return self.aliases.get(key, key)

    def hidden(self, key: NodeKey) -> bool:
        until = self._hidden.get(key)
        if until is None:
            return False
        if time.monotonic() < until:
            return True
        del self._hidden[key]
        return False

    def _hide(self, key: NodeKey) -> None:
        self._hidden[key] = time.monotonic() + _HIDE_FOR

    async def child(self, parent: NodeKey, name: str) -> NodeKey | None:
        if self.scratch is not None:
            found = self.scratch.lookup(parent, name)
            if found is not None:
                return found
        kind = parent[0]
        if kind == Kind.CTL and name == LOST_AND_FOUND:
            return (Kind.LOST,)
        if kind == Kind.LOST:
            return (Kind.LOSTF, name) if name in self._lost_names() else None
        if kind == Kind.NEWDIR:
            return None
        child = await self.tree.lookup(parent, name)
        if child is None or self.hidden(child):
            return None
        return child

    async def children(self, parent: NodeKey) -> dict[str, NodeKey]:
        kind = parent[0]
        if kind == Kind.LOST:
            return {name: (Kind.LOSTF, name) for name in self._lost_names()}
        listing = {} if kind == Kind.NEWDIR else await self.tree.children(parent)
        listing = {n: k for n, k in listing.items() if not self.hidden(k)}
        if kind == Kind.CTL:
            listing[LOST_AND_FOUND] = (Kind.LOST,)
        if self.scratch is not None:
            listing.update(self.scratch.names_in(parent))
        return listing

    def _lost_names(self) -> list[str]:
        return [p.name for p in self.spool.lost_and_found()] if self.spool is not None else []

    def lost_path(self, key: NodeKey) -> Path:
        if self.spool is None:
            raise errors.NotFound("no lost+found")
        return self.spool.directory / LOST_AND_FOUND / str(key[1])

    async def source_name(self, doc_id: int) -> str | None:
        """The name of the document's source file in its directory (hidden or not)."""
        listing = await self.tree.children((Kind.DOC, doc_id))
        return next((n for n, k in listing.items() if k == (Kind.SRC, doc_id)), None)

    # --- making things -------------------------------------------------------------

    def _scratch(self) -> Scratch:
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

    def scratch_closed(self, scratch: ScratchFile) -> None:
        """The last handle on ``scratch`` is gone: its content goes if it has no name."""
        if self.scratch is not None:
            self.scratch.closed(scratch)

    async def create(self, parent: NodeKey, name: str, mode: int) -> NodeKey:
        """The node a new file ``name`` in ``parent`` stands for (made now)."""
        kind = parent[0]
        if kind == Kind.DOC:
            doc_id = nodes.doc_id(parent)
            if name == await self.source_name(doc_id):
                # The source file was renamed away (vim) and is written anew.
                self._hidden.pop((Kind.SRC, doc_id), None)
                return (Kind.SRC, doc_id)
        elif kind in nodes.UPLOAD_DIRS:
            await self._files_in().check_name(parent, name)
        elif kind not in FOLDERS and kind != Kind.NEWDIR:
            raise errors.AccessDenied("files are made in type folders and documents only")
        return self._scratch().create(parent, name, mode).key

    def mkdir(self, parent: NodeKey, name: str) -> NodeKey:
        if parent[0] not in FOLDERS:
            raise errors.OperationNotPermitted("directories are made in type folders only")
        return self._scratch().mkdir(parent, name).key

    def makes_document(self, scratch: ScratchFile) -> bool:
        """Whether closing ``scratch`` creates a new document."""
        return makes_document(scratch.parent, scratch.name)

    async def make_document(self, scratch: ScratchFile) -> None:
        """The last writer closed ``scratch``: create the document it stands for, or,
        when it became one already, check in what was written since as a draft of it
        (a handle kept open across the create: never dropped). One written into
        renditions/ or attachments/ is uploaded instead (``files_in``)."""
        self.in_flight += 1
        try:
            # One at a time per file: a writer that reopened it during the create (a
            # shell's ``> f; >> f``) is checked in as a draft of what the create made.
            async with scratch.writers.lock:
                await self._make_document(scratch)
        finally:
            self.in_flight -= 1

    async def _make_document(self, scratch: ScratchFile) -> None:
        if scratch.linked and is_upload(scratch.parent, scratch.name):
            await self._upload(scratch)
            return
        if scratch.became is not None:
            scratch.dirty = False
            await self.editing.check_in_file(scratch.became, scratch.path)
            return
        if not scratch.linked or not self.makes_document(scratch):
            return
        assert self.scratch is not None and self.creator is not None
        scratch.dirty = False
        folder = self.scratch.folder(scratch.parent)
        filename = unescape(scratch.name)
        if folder is not None:
            where, name = folder.parent, unescape(folder.name)
        else:
            where, name = scratch.parent, os.path.splitext(filename)[0] or filename
        given = self.new_fields.given(where, scratch)
        try:
            doc_id = await self._draft_of_namesake(where, name, scratch.path)
            if doc_id is None:
                doc_id = await self.creator.create(where, name, filename, scratch.path, given)
        except (errors.ParameterRequired, errors.InvalidData) as exc:
            # Not the user's fault, nor lost: the file waits in place for its fields.
            scratch.missing = await self.creator.missing(where, name, given)
            scratch.refusal = exc.message
            log.warning(
                "new document %r in %s waits: %s (setfattr -n user.vault.<field> -v VALUE "
                "on the file supplies a field)",
                filename,
                nodes.folder_path(where),
                exc.message,
            )
            return
        except errors.VaultError:
            self.scratch.unname(scratch.key)  # the content is in lost+found now
            raise
        self.aliases[scratch.key] = (Kind.SRC, doc_id)
        scratch.became = doc_id
        self.scratch.unname(scratch.key)
        if folder is not None:
            # The folder is the document now: its other files stay its scratch files.
            self.aliases[folder.key] = (Kind.DOC, doc_id)
            self.scratch.move_children(folder.key, (Kind.DOC, doc_id))
            self.scratch.unname(folder.key)

    async def _draft_of_namesake(self, folder: NodeKey, name: str, content: Path) -> int | None:
        """A new file whose document name a document of ``folder`` has already is a new
        draft of that document (``rsync``, ``cp`` of the same file again), and nothing
        when the content is the same (no call). Returns that document, or None."""
        namesakes = sorted(
            nodes.doc_id(key)
            for key in (await self.tree.children(folder)).values()
            if key[0] == Kind.DOC and self.tree.record(nodes.doc_id(key)).get("name__v") == name
        )
        if not namesakes:
            return None
        doc_id = namesakes[0]
        md5 = await trio.to_thread.run_sync(spool_store.md5_of, content)
        if md5 == str(self.tree.record(doc_id).get("md5checksum__v") or "").lower():
            log.info("new file %r: document %d holds this content; nothing sent", name, doc_id)
        else:
            log.info("new file %r: a new draft of document %d of that name", name, doc_id)
            await self.editing.check_in_file(doc_id, content)
        return doc_id

    async def set_new_field(self, key: NodeKey, name: str, value: bytes | None) -> None:
        """setfattr on a new file (its fields) or a folder (defaults for new files);
        a pending new document that is complete now is created at once."""
        scratch = self._scratch().file(key) if key[0] == Kind.SCRATCH else None
        if scratch is not None and not self.makes_document(scratch):
            raise errors.Unsupported("a scratch file has no fields")
        self.new_fields.set(key, scratch, name, value)
        if scratch is not None and scratch.missing is not None and scratch.writers.count == 0:
            await self.make_document(scratch)

    def new_fields_of(self, key: NodeKey) -> dict[str, object]:
        """The xattr view of a new file's or a folder's supplied fields."""
        scratch = self.scratch.file(key) if self.scratch is not None else None
        if scratch is not None:
            return self.new_fields.of_file(scratch) if self.makes_document(scratch) else {}
        return self.new_fields.of_folder(key) if key[0] in FOLDERS else {}

    def pending_new(self) -> list[dict[str, object]]:
        """New files waiting for fields, for the status."""
        files = self.scratch.files.values() if self.scratch is not None else []
        return [
            {"file": f.name, "folder": list(f.parent), "missing": f.missing, "error": f.refusal}
            for f in files
            if f.linked and f.missing is not None
        ]

    # --- renditions and attachments in (``files_in``) ------------------------------

    def _files_in(self) -> FilesIn:
        if self.files_in is None or self.scratch is None:
            raise errors.ReadOnly("this mount has no write-back spool")
        return self.files_in

    async def open_uploaded(self, key: NodeKey, *, truncate: bool) -> ScratchFile:
        """open() for writing of a rendition or attachment: a scratch file stands for
        it until its close uploads what was written."""
        scratch = await self._files_in().shadow(self._scratch(), key, truncate=truncate)
        self.aliases[key] = scratch.key
        return scratch

    async def _upload(self, scratch: ScratchFile) -> None:
        """Hand ``scratch`` to the spool as a rendition or attachment and upload it.
        Once the spool has the content the scratch file goes (the content is then in
        the vault, or in the spool and retried, or in lost+found); a failure before
        that leaves it in place, as written."""
        files_in = self._files_in()
        scratch.dirty = False
        try:
            entry = await files_in.spool(scratch)
        except BaseException:
            scratch.dirty = True
            raise
        self._unshadow(scratch.key)
        self._scratch().unname(scratch.key)
        if entry is None:
            return  # the vault has this content already
        became = await files_in.send(scratch.parent, entry)
        if became is not None:
            self.aliases[scratch.key] = became

    def _unshadow(self, scratch_key: NodeKey) -> None:
        """The vault's file a scratch file stood for while written is shown again."""
        for key in [k for k, v in self.aliases.items() if v == scratch_key]:
            del self.aliases[key]

    async def _rename_to_upload(
        self, scratch: ScratchFile, target: NodeKey | None, new: NodeKey, new_name: str
    ) -> None:
        """A file renamed into renditions/ or attachments/ (rsync's temporary file):
        uploaded under its new name, replacing what had that name."""
        store = self._scratch()
        await self._files_in().check_name(new, new_name)
        if target is not None and store.file(target) is not None:
            store.unname(target)
        store.rename(scratch.key, new, new_name)
        if scratch.writers.count == 0 and is_upload(new, new_name):
            await self._upload(scratch)

    # --- renaming ------------------------------------------------------------------

    async def rename(self, old: NodeKey, old_name: str, new: NodeKey, new_name: str) -> None:
        source = await self.child(old, old_name)
        if source is None:
            raise errors.NotFound(old_name)
        target = await self.child(new, new_name)
        if source == target:
            return
        scratch = self.scratch.file(source) if self.scratch is not None else None
        if scratch is not None:
            await self._rename_scratch(scratch, target, new, new_name)
        elif source[0] == Kind.SRC:
            await self._rename_source(nodes.doc_id(source), target, new, new_name)
        elif source[0] == Kind.NEWDIR and target is None and new == old:
            self._scratch().rename(source, new, new_name)
        elif source[0] == Kind.DOC and target is None and new == old:
            await self._rename_document(nodes.doc_id(source), new_name)
        else:
            raise errors.OperationNotPermitted("only files and new folders can be renamed")

    async def _rename_scratch(
        self, scratch: ScratchFile, target: NodeKey | None, new: NodeKey, new_name: str
    ) -> None:
        store = self._scratch()
        if new[0] in nodes.UPLOAD_DIRS:
            await self._rename_to_upload(scratch, target, new, new_name)
            return
        if new[0] == Kind.DOC:
            doc_id = nodes.doc_id(new)
            if target == (Kind.SRC, doc_id) or new_name == await self.source_name(doc_id):
                # The save of an editor, sed -i or rsync: check the content in.
                self._hidden.pop((Kind.SRC, doc_id), None)
                await self.editing.check_in_file(doc_id, scratch.path)
                self.aliases[scratch.key] = (Kind.SRC, doc_id)
                store.unname(scratch.key)
                return
        if target is not None:
            if store.file(target) is None:
                if target[0] in (Kind.SRC, Kind.EVENTS):
                    raise errors.OperationNotPermitted(new_name)
                raise errors.IsADirectory(new_name)
            store.unname(target)
        if new[0] not in FOLDERS and new[0] not in (Kind.DOC, Kind.NEWDIR):
            raise errors.CrossDevice("scratch files stay in document and type folders")
        store.rename(scratch.key, new, new_name)
        if scratch.writers.count == 0 and self.makes_document(scratch):
            await self.make_document(scratch)

    async def _rename_source(
        self, doc_id: int, target: NodeKey | None, new: NodeKey, new_name: str
    ) -> None:
        if new != (Kind.DOC, doc_id):
            raise errors.CrossDevice("a source file stays in its document directory")
        if not is_temporary_name(new_name):
            # Only an editor's backup (``file~``, ``.file.bak``...) may take the source
            # file's content under another name: a visible name would exist only on
            # this mount while looking like a vault file.
            refusal = errors.OperationNotPermitted(
                f"document {doc_id}: the source file keeps the vault's file name; "
                f"renaming it to {new_name!r} would exist only on this mount "
                "(rename the document's directory to rename the document)"
            )
            log.warning("rename refused: %s", refusal)
            raise refusal
        store = self._scratch()
        if target is not None:
            if store.file(target) is None:
                raise errors.OperationNotPermitted(f"{new_name} belongs to the vault")
            store.unname(target)
        entry = self.editing.entry(doc_id)
        if entry is not None:
            path: Path | None = entry.path
        else:
            content = await content_of(self.tree, (Kind.SRC, doc_id))
            path = await self.blobs.cached_path(content.key, content.fetch)
        await trio.to_thread.run_sync(store.copy_of, new, new_name, path, 0o644)
        self._hide((Kind.SRC, doc_id))
        log.info("document %d: source file renamed to scratch %r", doc_id, new_name)

    async def _rename_document(self, doc_id: int, new_name: str) -> None:
        await self.client.update_document(doc_id, {"name__v": unescape(new_name)})
        self.tree.invalidate(doc_id)
        await self.tree.reload(doc_id)

    # --- removing ------------------------------------------------------------------

    def _deleting(self) -> None:
        if not self.allow_delete:
            raise errors.OperationNotPermitted("deleting is off (mount with -o allow_delete)")

    async def unlink(self, parent: NodeKey, name: str) -> None:
        key = await self.child(parent, name)
        if key is None:
            raise errors.NotFound(name)
        kind = key[0]
        if kind == Kind.SCRATCH:
            self._unshadow(key)
            self._scratch().unname(key)
        elif kind == Kind.LOSTF:
            assert self.spool is not None
            await trio.to_thread.run_sync(lost.remove_lost, self.spool.directory, name)
        elif kind == Kind.VSRC:
            self._deleting()
            await self._delete_version(key)
        elif kind in nodes.UPLOADED_FILES:
            self._deleting()
            await self._files_in().delete(key)
        elif kind == Kind.SRC:
            self._deleting()
            self._hide(key)  # the document goes with rmdir of its directory
        elif kind in (Kind.STATUS, Kind.EVENTS):
            raise errors.OperationNotPermitted(f"{name} cannot be removed")
        else:
            raise errors.IsADirectory(name)

    async def _delete_version(self, key: NodeKey) -> None:
        doc_id, (major, minor) = nodes.doc_id(key), nodes.version(key)
        details = await self.tree.details(doc_id)
        if len(details.versions) <= 1:
            # The vault keeps a document's only version: it goes with the document.
            self._hide(key)
            return
        await self.client.delete_version(doc_id, major, minor)
        self._deleted.add((doc_id, major, minor))
        log.info("deleted version %d.%d of document %d", major, minor, doc_id)
        self.tree.invalidate(doc_id)
        await self.tree.reload(doc_id)

    def _deleted_version(self, parent: NodeKey, name: str) -> bool:
        version = parse_version(name)
        return (
            parent[0] == Kind.VERS
            and version is not None
            and (nodes.doc_id(parent), *version) in self._deleted
        )

    async def rmdir(self, parent: NodeKey, name: str) -> None:
        key = await self.child(parent, name)
        if key is None:
            if self._deleted_version(parent, name):
                return  # its file's removal deleted it, in the same rm -r walk
            raise errors.NotFound(name)
        kind = key[0]
        if kind == Kind.NEWDIR:
            if self._scratch().names_in(key):
                raise errors.DirectoryNotEmpty(name)
            self._scratch().unname(key)
            return
        if nodes.is_file(key):
            raise errors.NotADirectory(name)
        if kind not in FOLDERS and kind not in DOCUMENT_DIRS and kind != Kind.DOC:
            raise errors.OperationNotPermitted(f"{name} cannot be removed")
        self._deleting()
        if kind in FOLDERS and not self.tree.folder_exists(key):
            return  # its last document is gone: so is the folder
        if await self.children(key):
            raise errors.DirectoryNotEmpty(name)
        if kind == Kind.DOC:
            doc_id = nodes.doc_id(key)
            await self.client.delete_document(doc_id)
            log.info("deleted document %d", doc_id)
            self.tree.index.forget(doc_id)
            for hidden in [k for k in self._hidden if len(k) > 1 and k[1] == doc_id]:
                del self._hidden[hidden]
        else:
            self._hide(key)
