"""New documents and uploads made from scratch files when their last writer closes.

Owns what a closed scratch file becomes (docs/writing.md): in a type folder, or in a
directory made there with mkdir, a new document (``creating``), or a new draft of the
folder's document of the same name, or, when fields are missing, a file that waits for
them (``setfattr``, ``new_fields``); in ``renditions/`` or ``attachments/``, an upload
(``files_in``); in a document's directory, under a name no temporary file has, an
attachment of the document once its grace is over (``drops``); a scratch file that
became a document already, a draft of it. Also the
aliases such a file leaves (the kernel's inode of the scratch file is the document's
source file now) and the count of those still being made, for the status.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import trio

from vaultfs import errors
from vaultfs.bridge.tree import keys, nodes, xattrs
from vaultfs.bridge.tree.filenames import unescape
from vaultfs.bridge.tree.keys import Kind, NodeKey
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.write.creating import Creator
from vaultfs.bridge.write.drops import Drops
from vaultfs.bridge.write.editing import Editing
from vaultfs.bridge.write.fields import FieldEditor
from vaultfs.bridge.write.files_in import FilesIn
from vaultfs.bridge.write.new_fields import MISSING, NewFields
from vaultfs.bridge.write.scratch import (
    Scratch,
    ScratchFile,
    is_drop,
    is_upload,
    makes_document,
    new_document_name,
)
from vaultfs.bridge.write.spool import store as spool_store
from vaultfs.bridge.write.spool.queue import may_pass

__all__ = ["Names", "NewDocuments"]

log = logging.getLogger(__name__)


class Names(Protocol):
    """What this module asks of the overlay of names (``fs.overlay.Overlay``)."""

    #: node the kernel still knows -> the node it now stands for
    aliases: dict[NodeKey, NodeKey]

    @property
    def scratch(self) -> Scratch | None: ...

    def store(self) -> Scratch: ...

    def unshadow(self, scratch_key: NodeKey) -> None: ...

    async def source_name(self, doc_id: int) -> str | None: ...


class NewDocuments:
    def __init__(
        self,
        tree: Tree,
        editing: Editing,
        overlay: Names,
        new_fields: NewFields,
        *,
        creator: Creator | None,
        files_in: FilesIn | None,
        fields: FieldEditor | None = None,
        keep_names: bool = False,
    ) -> None:
        """``creator``, ``files_in``: None on a read-only mount; ``fields`` sets the
        fields given while a create was on its way on the document it made;
        ``keep_names``: a new file's name stays its writer's a while (a WebDAV front)."""
        self.tree = tree
        self.editing = editing
        self.overlay = overlay
        self.new_fields = new_fields
        self.creator = creator
        self.files_in = files_in
        self.fields = fields
        self.keep_names = keep_names
        #: new documents (or uploads) a last close started making, not done yet
        self.in_flight = 0
        #: closed new files whose create waits for the vault (``run`` makes them)
        self.waiting_for_vault: dict[int, ScratchFile] = {}
        #: files dropped into documents' directories, waiting out their grace (None
        #: on a read-only mount); its ``run`` is the mount's to start
        self.drops = Drops(self.take_drop, self._waits) if files_in is not None else None
        #: called with each dropped file once it is the document's attachment (its
        #: name left the document's directory: the builder has the folder's watchers
        #: told, ``Freshness.name_gone``)
        self.on_drop_taken: list[Callable[[ScratchFile], None]] = []

    def scratch_closed(self, scratch: ScratchFile) -> None:
        """The last handle on ``scratch`` is gone: its content goes if it has no name."""
        if self.overlay.scratch is not None:
            self.overlay.scratch.closed(scratch)

    async def make_document(self, scratch: ScratchFile, *, waited: bool = False) -> None:
        """The last writer closed ``scratch``: create the document it stands for, or,
        when it became one already, check in what was written since as a draft of it
        (a handle kept open across the create: never dropped). One written into
        renditions/ or attachments/ is uploaded instead (``files_in``). ``waited``:
        nothing more is waited for (a client's lock on its name ended, or its grace)."""
        self.in_flight += 1
        try:
            # One at a time per file: a writer that reopened it during the create (a
            # shell's ``> f; >> f``) is checked in as a draft of what the create made.
            async with scratch.writers.taken():
                await self._make_document(scratch, waited)
        finally:
            self.in_flight -= 1

    async def _make_document(self, scratch: ScratchFile, waited: bool) -> None:
        if scratch.holds and scratch.linked:
            return  # a client's lock on its name: made when the lock ends (``let_go``)
        if scratch.linked and is_upload(scratch.parent, scratch.name):
            await self.upload(scratch)
            return
        if scratch.linked and is_drop(scratch.parent, scratch.name) and self.drops is not None:
            self.drops.closed(scratch)
            return
        if scratch.became is not None:
            scratch.dirty = False
            await self.editing.check_in_file(scratch.became, scratch.path)
            return
        if not scratch.linked or not makes_document(scratch.parent, scratch.name):
            return
        if self.keep_names and not waited and scratch.size() == 0 and self.drops is not None:
            # A copy's first PUT (0 bytes): its LOCK and content come within the grace.
            self.drops.closed(scratch)
            return
        store = self.overlay.store()
        assert self.creator is not None
        scratch.dirty = False
        folder = store.folder(scratch.parent)
        filename = unescape(scratch.name)
        where, name = self._target(scratch)
        given = self.new_fields.given(where, scratch)
        # Being tried: a setfattr meanwhile is picked up by this try (below), not by a
        # second one.
        scratch.missing = None
        if not await self._metadata_known(scratch, where, name, given):
            return
        try:
            doc_id = await self._draft_of_namesake(where, name, scratch.path)
            while doc_id is None:
                try:
                    doc_id = await self.creator.create(where, name, filename, scratch.path, given)
                except (errors.ParameterRequired, errors.InvalidData) as exc:
                    missing = await self.creator.missing(where, name, given)
                    # A setfattr that came while the create was tried (a script's next
                    # command, right after the close) is in ``given`` now: try again
                    # with it. No await between this look and ``missing`` being set, so a
                    # later setfattr sees the file waiting and starts the create itself.
                    now = self.new_fields.given(where, scratch)
                    if now != given:
                        given = now
                        continue
                    # Not the user's fault, nor lost: the file waits in place.
                    scratch.missing = missing
                    scratch.refusal = exc.message
                    log.warning(
                        "new document %r in %s waits: %s (setfattr -n user.vault.<field> "
                        "-v VALUE on the file supplies a field)",
                        filename,
                        nodes.folder_path(where),
                        exc.message,
                    )
                    return
        except errors.VaultError:
            store.unname(scratch.key)  # its content is in lost+found, or a create queued
            raise
        self.overlay.aliases[scratch.key] = keys.source(doc_id)
        scratch.became = doc_id
        if self.keep_names and self.drops is not None:
            self.drops.closed(scratch)  # the writer's name, for the grace (``take_drop``)
        else:
            store.unname(scratch.key)
        if folder is not None:
            # The folder is the document now: its other files stay its scratch files.
            self.overlay.aliases[folder.key] = keys.document(doc_id)
            store.move_children(folder.key, keys.document(doc_id))
            store.unname(folder.key)
        await self._fields_given_meanwhile(doc_id, given, self.new_fields.given(where, scratch))

    async def _metadata_known(
        self, scratch: ScratchFile, where: NodeKey, name: str, given: dict[str, str]
    ) -> bool:
        """Whether the type metadata a create is made from can be read (kept from before
        when the vault is away). Else, the vault away or offline, the file waits in
        place, closed and complete, until it is back (``run``): nothing is queued that
        could not be sent as it is."""
        assert self.creator is not None
        try:
            await self.creator.missing(where, name, given)
        except errors.VaultError as exc:
            if not may_pass(exc):
                raise
            scratch.dirty = True  # made once the vault is back
            self.waiting_for_vault[scratch.number] = scratch
            log.info("new file %r waits for the vault: %s", scratch.name, exc)
            return False
        self.waiting_for_vault.pop(scratch.number, None)
        return True

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The background work of new files, until cancelled: dropped files taken once
        their grace is over (``drops``), and the files that waited for the vault made
        each time it is back."""
        reach = self.tree.reach
        async with trio.open_nursery() as nursery:
            if self.drops is not None:
                await nursery.start(self.drops.run)
            task_status.started()
            while True:
                await reach.wait_until(online=False)
                await reach.wait_until(online=True)
                for number, scratch in list(self.waiting_for_vault.items()):
                    if scratch.linked and scratch.writers.count == 0 and scratch.dirty:
                        try:
                            await self.make_document(scratch)
                        except (errors.VaultError, OSError) as exc:
                            log.warning("new file %r: %s", scratch.name, exc)
                    else:
                        self.waiting_for_vault.pop(number, None)

    def _target(self, scratch: ScratchFile) -> tuple[NodeKey, str]:
        """The folder a new file makes its document in, and the document's name: the
        file's folder and name, or, for a file in a folder made with mkdir, that
        folder's parent and name."""
        folder = self.overlay.store().folder(scratch.parent)
        if folder is not None:
            return folder.parent, unescape(folder.name)
        return scratch.parent, new_document_name(unescape(scratch.name))

    async def _fields_given_meanwhile(
        self, doc_id: int, sent: dict[str, str], now: dict[str, str]
    ) -> None:
        """Fields set (or removed) on the new file while its create was on its way are
        set on the document it made, as a setfattr on it would: never dropped."""
        changed: dict[str, str | None] = {k: v for k, v in now.items() if sent.get(k) != v}
        changed.update({k: None for k in sent.keys() - now.keys()})
        if not changed or self.fields is None:
            return
        for field, text in changed.items():
            value = None if text is None else text.encode()
            try:
                record = self.tree.record(doc_id)
                await self.fields.set(doc_id, None, record, xattrs.PREFIX + field, value)
            except errors.VaultError as exc:
                log.warning(
                    "new document %d: %s given during its create could not be set: %s",
                    doc_id,
                    field,
                    exc,
                )

    async def _draft_of_namesake(self, folder: NodeKey, name: str, content: Path) -> int | None:
        """A new file whose document name a document of ``folder`` has already is a new
        draft of that document (``rsync``, ``cp`` of the same file again), and nothing
        when the content is the same (no call). Returns that document, or None."""
        namesakes = self.tree.documents_named(folder, name)
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

    # --- fields of new files --------------------------------------------------------

    async def set_field(self, key: NodeKey, name: str, value: bytes | None) -> None:
        """setfattr on a new file (its fields) or a folder (defaults for new files);
        a pending new document that is complete now is created at once."""
        scratch = self.overlay.store().file(key) if key.kind == Kind.SCRATCH else None
        if scratch is not None and not makes_document(scratch.parent, scratch.name):
            raise errors.Unsupported("a scratch file has no fields")
        self.new_fields.set(key, scratch, name, value)
        if scratch is not None and scratch.missing is not None and scratch.writers.count == 0:
            await self.make_document(scratch)

    async def fields_of_file(self, key: NodeKey) -> dict[str, object]:
        """The xattr view of a new file's supplied fields, with what its create lacks:
        from the type's metadata before the first try, from the vault's answer after."""
        scratch = self.overlay.scratch.file(key) if self.overlay.scratch is not None else None
        if scratch is None or not makes_document(scratch.parent, scratch.name):
            return {}
        shown = self.new_fields.of_file(scratch)
        if MISSING not in shown and self.creator is not None and scratch.became is None:
            where, name = self._target(scratch)
            given = self.new_fields.given(where, scratch)
            shown[MISSING] = await self.creator.missing(where, name, given)
        return shown

    def pending_new(self) -> list[dict[str, object]]:
        """New files waiting for fields, for the status."""
        scratch = self.overlay.scratch
        files = scratch.files.values() if scratch is not None else []
        return [
            {"file": f.name, "folder": list(f.parent), "missing": f.missing, "error": f.refusal}
            for f in files
            if f.linked and f.missing is not None
        ]

    # --- renditions and attachments in (``files_in``) -------------------------------

    def uploads(self) -> FilesIn:
        if self.files_in is None or self.overlay.scratch is None:
            raise errors.ReadOnly("this mount has no write-back spool")
        return self.files_in

    async def open_uploaded(self, key: NodeKey, *, truncate: bool) -> ScratchFile:
        """open() for writing of a rendition or attachment: a scratch file stands for
        it until its close uploads what was written."""
        scratch = await self.uploads().shadow(self.overlay.store(), key, truncate=truncate)
        self.overlay.aliases[key] = scratch.key
        return scratch

    async def upload(self, scratch: ScratchFile, directory: NodeKey | None = None) -> None:
        """Hand ``scratch`` to the spool as a rendition or attachment in ``directory``
        (None: the one it was written in) and upload it. Once the spool has the content
        the scratch file goes (the content is then in the vault, or in the spool and
        retried, or in lost+found); a failure before that leaves it in place, as
        written."""
        files_in = self.uploads()
        directory = scratch.parent if directory is None else directory
        scratch.dirty = False
        try:
            entry = await files_in.spool(scratch, directory)
        except BaseException:
            scratch.dirty = True
            raise
        self.overlay.unshadow(scratch.key)
        self.overlay.store().unname(scratch.key)
        if entry is None:
            return  # the vault has this content already
        became = await files_in.send(directory, entry)
        if became is not None:
            self.overlay.aliases[scratch.key] = became

    # --- the grace of ``drops``, and the holds of a client's locks ------------------

    def _waits(self, scratch: ScratchFile) -> bool:
        """Whether ``scratch`` still waits out a grace of ``drops``: a file dropped in a
        document's directory, or (``keep_names``) a new file put empty in a folder or
        a new document's file under the name its writer gave it."""
        if not scratch.linked:
            return False
        if scratch.became is not None:
            return self.keep_names
        return is_drop(scratch.parent, scratch.name) or (
            self.keep_names and makes_document(scratch.parent, scratch.name)
        )

    def hold(self, key: NodeKey) -> bool:
        """A client's lock on the name of ``key``: a new file (not a document yet), or
        a file dropped in a document's directory, made nothing of until ``let_go``.
        Whether ``key`` is such a file (else nothing is held)."""
        scratch = self.overlay.scratch.file(key) if self.overlay.scratch is not None else None
        if scratch is None or scratch.became is not None:
            return False
        if not (
            makes_document(scratch.parent, scratch.name) or is_drop(scratch.parent, scratch.name)
        ):
            return False
        scratch.holds += 1
        return True

    async def let_go(self, key: NodeKey) -> None:
        """The end of a hold of ``hold``; at the last, the file is what its closes
        would have made it (a new document now; a drop after its grace)."""
        scratch = self.overlay.scratch.file(key) if self.overlay.scratch is not None else None
        if scratch is None or scratch.holds == 0:
            return
        scratch.holds -= 1
        if scratch.holds == 0 and scratch.writers.count == 0 and scratch.linked:
            await self.make_document(scratch, waited=True)

    async def take_drop(self, scratch: ScratchFile) -> None:
        """A file whose grace is over (``drops``). Dropped in a document's directory:
        uploaded as an attachment of that document under its name (the next version of
        an attachment of that name), unless it is the source file's name now. On a
        front keeping its clients' names: a new file put empty becomes its (empty)
        document, and a new document's file the name its writer gave it goes."""
        if scratch.became is not None:
            self.overlay.store().unname(scratch.key)
            for taken in self.on_drop_taken:
                taken(scratch)
            return
        if makes_document(scratch.parent, scratch.name):
            await self.make_document(scratch, waited=True)
            return
        doc_id = scratch.parent.doc_id
        if scratch.name == await self.overlay.source_name(doc_id):
            return
        log.info("file %r dropped into document %d: kept as its attachment", scratch.name, doc_id)
        self.in_flight += 1
        try:
            async with scratch.writers.taken():
                await self.upload(scratch, keys.attachments(doc_id))
        finally:
            self.in_flight -= 1
        for taken in self.on_drop_taken:
            taken(scratch)

    async def rename_to_upload(
        self, scratch: ScratchFile, target: NodeKey | None, new: NodeKey, new_name: str
    ) -> None:
        """A file renamed into renditions/ or attachments/ (rsync's temporary file):
        uploaded under its new name, replacing what had that name."""
        store = self.overlay.store()
        await self.uploads().check_name(new, new_name)
        if target is not None and store.file(target) is not None:
            store.unname(target)
        store.rename(scratch.key, new, new_name)
        if scratch.writers.count == 0 and is_upload(new, new_name):
            await self.upload(scratch)
