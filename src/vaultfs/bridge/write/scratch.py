"""Scratch files: the files a mount holds locally and never uploads as they are.

Editors and tools invent file names next to the file they save: swap files
(``.name.swp``), vim's ``4913`` probe, backups (``name~``), ``sed -i``'s
``sedXXXXXX``, rsync's ``.name.XXXXXX``, LibreOffice's ``.~lock.name#``. Any new name
in a document directory, and any new file in a type folder, is such a scratch file:
its content lives in ``<spool>/scratch/<n>`` (mode 0600), its name and attributes in
memory. Nothing of it is uploaded until it is renamed over a document's source file
(a check-in), or, in a folder, becomes a new document, or, in a document directory,
is left there under a name that is no temporary file's and becomes an attachment
(``write.drops``). Scratch files vanish on unmount (the mount empties the directory
when it starts: ``empty_private_dir``), except the files that were to become new
documents, uploads or attachments: their name is kept with the content (the
``user.vaultfs.scratch`` extended attribute), and the spool moves them to lost+found
first (``lost.rescue_scratch``), so a crash of the daemon loses none of them.

Owns the names (directory key + name -> scratch file), the content files and the
attributes; what a scratch file means is its family's (``nodes.local``) and, once
closed, ``new_documents``'.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from vaultfs.bridge.tree import keys, nodes
from vaultfs.bridge.tree.keys import LocalKey, typed
from vaultfs.bridge.tree.nodes import NodeKey
from vaultfs.bridge.write.spool.store import SCRATCH_XATTR
from vaultfs.bridge.write.writers import Writers

__all__ = [
    "NewFolder",
    "Scratch",
    "ScratchFile",
    "empty_private_dir",
    "is_drop",
    "is_temporary_name",
    "is_upload",
    "makes_document",
    "new_document_name",
]

_DIR_MODE = 0o700
_FILE_MODE = 0o600


def empty_private_dir(directory: Path) -> Path:
    """``directory`` made anew, empty and private: what an earlier mount left there is
    nobody's any more (scratch never outlives one mount)."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(mode=_DIR_MODE, parents=True)
    os.chmod(directory, _DIR_MODE)
    return directory


#: what Windows Explorer writes beside the files of a folder it shows
_DESKTOP_FILES = frozenset({"desktop.ini", "thumbs.db"})


def is_temporary_name(name: str) -> bool:
    """Names that tools give temporary files: never a new document in a folder.
    (Finder's ``._*`` and ``.DS_Store`` and Office's ``~$*`` and ``~WRL*.tmp`` are
    among the dot, tilde and .tmp names.)"""
    return (
        name.lower() in _DESKTOP_FILES
        or name.startswith((".", "#", "~"))
        or name.endswith(("~", ".swp", ".swx", ".tmp", ".part", "#"))
        or name.isdigit()  # vim's "4913" probe
        or (name.startswith("sed") and len(name) == 9)  # sed -i's sedXXXXXX
    )


def makes_document(parent: NodeKey, name: str) -> bool:
    """Whether a file ``name`` in ``parent`` becomes a new document when closed."""
    return typed(parent).kind in nodes.NEW_DOCUMENT_DIRS and not is_temporary_name(name)


def new_document_name(filename: str) -> str:
    """The ``name__v`` a new file called ``filename`` (unescaped) gives its document:
    the file name without its extension."""
    return os.path.splitext(filename)[0] or filename


def is_upload(parent: NodeKey, name: str) -> bool:
    """Whether a file ``name`` in ``parent`` is uploaded as a rendition or attachment
    when closed (``write.files_in``)."""
    return typed(parent).kind in nodes.UPLOAD_DIRS and not is_temporary_name(name)


def is_drop(parent: NodeKey, name: str) -> bool:
    """Whether a file ``name`` in ``parent`` is a file dropped into a document's
    directory: it becomes an attachment of the document once closed and left alone
    for a moment (``write.drops``)."""
    return typed(parent).kind == keys.Kind.DOC and not is_temporary_name(name)


@dataclass
class ScratchFile:
    """One scratch file: its content file (kept open) and attributes."""

    number: int
    parent: NodeKey
    name: str
    path: Path
    fd: int
    mode: int
    mtime_ns: int = field(default_factory=time.time_ns)
    ctime_ns: int = field(default_factory=time.time_ns)
    #: open handles (readers and writers)
    handles: int = 0
    #: the writers among them, and whether the close of the last one takes the content
    writers: Writers = field(default_factory=Writers)
    #: created or changed (a truncation by open included) since its content was last
    #: taken: the release of the last writer takes it then (``touch``, ``: >``)
    dirty: bool = True
    #: still reachable by its name (False once unlinked or renamed over a source file)
    linked: bool = True
    #: the document this file became (a new file in a folder), once created: what is
    #: written through handles still open after that is a draft of that document
    became: int | None = None
    #: holds on its name (a WebDAV client's lock on it, ``new_documents.hold``): while
    #: one stands, closing it makes nothing yet; the end of the last one does
    holds: int = 0
    #: fields the user gave a new document before it is made (``new_fields``)
    fields: dict[str, str] = field(default_factory=dict)
    #: required fields the create still lacks (None: no create tried yet), and what
    #: the last try was told
    missing: list[str] | None = None
    refusal: str | None = None

    @property
    def key(self) -> NodeKey:
        return keys.scratch(self.number)

    def size(self) -> int:
        return os.fstat(self.fd).st_size

    def pread(self, offset: int, size: int) -> bytes:
        return os.pread(self.fd, size, offset)

    def pwrite(self, offset: int, data: bytes) -> int:
        view = memoryview(data)
        written = 0
        while written < len(view):
            written += os.pwrite(self.fd, view[written:], offset + written)
        self.touch()
        return written

    def truncate(self, size: int) -> None:
        os.ftruncate(self.fd, size)
        self.touch()

    def touch(self) -> None:
        self.dirty = True
        self.mtime_ns = self.ctime_ns = time.time_ns()

    def fsync(self) -> None:
        os.fsync(self.fd)

    def label(self) -> None:
        """Keep the name with the content, for a restart after a crash (best effort:
        a file system without user xattrs only loses that rescue)."""
        meta = {
            "name": self.name,
            "new_document": makes_document(self.parent, self.name),
            "upload": is_upload(self.parent, self.name) or is_drop(self.parent, self.name),
        }
        with contextlib.suppress(OSError):
            os.setxattr(self.fd, SCRATCH_XATTR, json.dumps(meta).encode())


@dataclass
class NewFolder:
    """A directory made with mkdir in a folder: a document waiting for its file."""

    number: int
    parent: NodeKey
    name: str
    ctime_ns: int = field(default_factory=time.time_ns)

    @property
    def key(self) -> NodeKey:
        return keys.new_folder(self.number)


class Scratch:
    """All scratch files and new folders of one mount."""

    def __init__(self, directory: Path) -> None:
        """``directory``: an empty private directory (``empty_private_dir``)."""
        self.directory = directory
        self._next = 1
        self.files: dict[int, ScratchFile] = {}
        self.folders: dict[int, NewFolder] = {}
        self._names: dict[tuple[NodeKey, str], NodeKey] = {}

    # --- names -------------------------------------------------------------------

    def lookup(self, parent: NodeKey, name: str) -> NodeKey | None:
        return self._names.get((parent, name))

    def names_in(self, parent: NodeKey) -> dict[str, NodeKey]:
        return {name: key for (p, name), key in self._names.items() if p == parent}

    def file(self, key: NodeKey) -> ScratchFile | None:
        key = typed(key)
        return self.files.get(key.number) if isinstance(key, LocalKey) and key.is_file else None

    def folder(self, key: NodeKey) -> NewFolder | None:
        key = typed(key)
        if isinstance(key, LocalKey) and not key.is_file:
            return self.folders.get(key.number)
        return None

    # --- changes -----------------------------------------------------------------

    def create(self, parent: NodeKey, name: str, mode: int) -> ScratchFile:
        number = self._take_number()
        path = self.directory / str(number)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, _FILE_MODE)
        os.fchmod(fd, _FILE_MODE)
        scratch = ScratchFile(number, parent, name, path, fd, stat.S_IMODE(mode) or 0o644)
        scratch.label()
        self.files[number] = scratch
        self._names[(parent, name)] = scratch.key
        return scratch

    def copy_of(self, parent: NodeKey, name: str, source: Path | None, mode: int) -> ScratchFile:
        """A scratch file holding a copy of ``source`` (empty for None). Blocking."""
        scratch = self.create(parent, name, mode)
        if source is not None:
            # copyfile rewrites the same inode, which the scratch file's fd keeps open.
            shutil.copyfile(source, scratch.path)
        return scratch

    def mkdir(self, parent: NodeKey, name: str) -> NewFolder:
        folder = NewFolder(self._take_number(), parent, name)
        self.folders[folder.number] = folder
        self._names[(parent, name)] = folder.key
        return folder

    def unname(self, key: NodeKey) -> None:
        """Take ``key`` off its name; a scratch file's content goes once nothing has it
        open (``closed``)."""
        for mark, value in list(self._names.items()):
            if value == key:
                del self._names[mark]
        scratch = self.file(key)
        if scratch is not None:
            scratch.linked = False
            self._drop_if_unused(scratch)
        folder = self.folder(key)
        if folder is not None:
            del self.folders[folder.number]

    def rename(self, key: NodeKey, parent: NodeKey, name: str) -> None:
        """Give ``key`` a new name (whatever had that name must be gone already)."""
        for mark, value in list(self._names.items()):
            if value == key:
                del self._names[mark]
        self._names[(parent, name)] = key
        item = self.file(key) or self.folder(key)
        if item is not None:
            item.parent, item.name = parent, name
        if isinstance(item, ScratchFile):
            item.label()

    def move_children(self, old: NodeKey, new: NodeKey) -> None:
        """The files of a new folder now belong to the document made from it."""
        for (parent, name), key in list(self._names.items()):
            if parent == old:
                del self._names[(parent, name)]
                self.rename(key, new, name)

    def closed(self, scratch: ScratchFile) -> None:
        self._drop_if_unused(scratch)

    def _drop_if_unused(self, scratch: ScratchFile) -> None:
        if scratch.linked or scratch.handles > 0:
            return
        self.files.pop(scratch.number, None)
        if scratch.fd >= 0:
            os.close(scratch.fd)
            scratch.fd = -1
        scratch.path.unlink(missing_ok=True)

    def _take_number(self) -> int:
        number = self._next
        self._next += 1
        return number
