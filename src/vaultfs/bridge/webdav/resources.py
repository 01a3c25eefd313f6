"""The WebDAV resources: the mount's tree as WsgiDAV's provider, collections and files.

Owns what each WebDAV method does to the tree, all through the path-level entry of
the file system (``fs.by_path``), so a name, a listing, a read or a save is the
mount's: a folder's PROPFIND lists it as ``readdir`` does (from the index, no API
call when the index knows the folder); a GET reads through the content cache; a PUT
is an open that replaces the content, its writes, close(2) and release, i.e. one save
of the mount (durable in the spool before the answer, checked in as one version);
names the desktops write beside documents stay scratch files, as in the mount. Fields
are properties in the ``urn:vaultfs:fields`` namespace, named as the mount's extended
attributes (``user.vault.<field>``); a PROPPATCH of one is a setfattr.

Explorer sets the times and attributes of each file it copies in with a PROPPATCH of
its Win32 properties (``urn:schemas-microsoft-com:``, Microsoft's MS-WDV): they are taken
(200 each) on any file. On a new file not yet a document (a scratch file) they are
kept, as dead properties, and ``Win32LastModifiedTime`` is its modification time,
so the drive shows the times Explorer gave it while it is one; a document's times are
the vault's (its versions'), so on a document's file they are taken and not kept.
"""

from __future__ import annotations

import dataclasses
import email.utils
import io
import stat
from collections.abc import Callable
from typing import Any

from wsgidav.dav_error import HTTP_FORBIDDEN, DAVError
from wsgidav.dav_provider import DAVCollection, DAVNonCollection, DAVProvider, _DAVResource
from wsgidav.xml_tools import etree

from vaultfs.bridge.fs.attributes import Attr
from vaultfs.bridge.fs.by_path import Entry, PathFileSystem
from vaultfs.bridge.webdav.calls import core

__all__ = ["FIELDS_NS", "VaultProvider", "etag_of", "resource_of"]

#: the namespace of the documents' fields as WebDAV properties
FIELDS_NS = "urn:vaultfs:fields"
_PREFIX = "{" + FIELDS_NS + "}"
#: Explorer's properties of a file (MS-WDV), taken on any file
_WIN32 = frozenset(
    "{urn:schemas-microsoft-com:}" + name
    for name in (
        "Win32CreationTime",
        "Win32LastModifiedTime",
        "Win32LastAccessTime",
        "Win32FileAttributes",
    )
)
_WIN32_MTIME = "{urn:schemas-microsoft-com:}Win32LastModifiedTime"
#: what one read from the core asks for (a GET streams in pieces of this size)
_CHUNK = 1 << 20


class VaultProvider(DAVProvider):
    """The tree of one signed-in user's core; ``held_elsewhere(path)``: who holds the
    document of a source file checked out when it is not this front (``locks``)."""

    def __init__(
        self,
        pfs: PathFileSystem,
        *,
        read_only: bool = False,
        held_elsewhere: Callable[[str], str | None] | None = None,
    ) -> None:
        super().__init__()
        self.pfs = pfs
        self.read_only = read_only
        self.held_elsewhere = held_elsewhere

    def is_readonly(self) -> bool:
        return self.read_only

    def get_resource_inst(self, path: str, environ: dict[str, Any]) -> Any:
        try:
            attr = core(self.pfs.stat, path)
        except DAVError as exc:
            if exc.value == 404:
                return None
            raise
        return resource_of(path.rstrip("/") or "/", environ, attr)


def resource_of(path: str, environ: dict[str, Any], attr: Attr | None) -> Any:
    if attr is not None and stat.S_ISDIR(attr.mode):
        return Folder(path, environ, attr)
    return File(path, environ, attr)


def _join(parent: str, name: str) -> str:
    return parent.rstrip("/") + "/" + name


class _Node(_DAVResource):
    """What files and folders share: fields as properties (in ``urn:vaultfs:fields``),
    deleting and moving through the core. Placed before WsgiDAV's class in the bases,
    so ``super()`` reaches WsgiDAV's own properties."""

    path: str
    provider: Any
    _fields: dict[str, bytes] | None = None

    def fields(self) -> dict[str, bytes]:
        if self._fields is None:
            self._fields = core(self.provider.pfs.xattrs, self.path)
        return self._fields

    def field_names(self) -> list[str]:
        return [_PREFIX + name for name in self.fields()]

    def field_value(self, name: str) -> str | None:
        if not name.startswith(_PREFIX):
            return None
        value = self.fields().get(name[len(_PREFIX) :])
        if value is None:
            raise DAVError(404)
        return value.decode("utf-8", "replace")

    def set_field(self, name: str, value: Any, dry_run: bool) -> bool:
        """Whether ``name`` is a field (then set, unless ``dry_run``)."""
        if not name.startswith(_PREFIX):
            return False
        if self.provider.read_only:
            raise DAVError(HTTP_FORBIDDEN)
        if not dry_run:
            text = None if value is None else (value.text or "").encode()
            core(self.provider.pfs.set_xattr, self.path, name[len(_PREFIX) :], text)
            self._fields = None
        return True

    def get_property_names(self, *, is_allprop: bool) -> list[str]:
        names: list[str] = super().get_property_names(is_allprop=is_allprop)
        return names if is_allprop else names + self.field_names()

    def get_property_value(self, name: str) -> Any:
        value = self.field_value(name)
        return super().get_property_value(name) if value is None else value

    def set_property_value(self, name: str, value: Any, *, dry_run: bool = False) -> None:
        if name in _WIN32:
            self.set_win32(name, value, dry_run)
        elif not self.set_field(name, value, dry_run):
            super().set_property_value(name, value, dry_run=dry_run)

    def set_win32(self, name: str, value: Any, dry_run: bool) -> None:
        """One of Explorer's Win32 properties: kept on a new file (its modification
        time set from ``Win32LastModifiedTime``), taken and not kept on a document's."""
        if dry_run or self.provider.read_only:
            return
        pfs = self.provider.pfs
        mtime_ns = _http_date_ns(value.text) if name == _WIN32_MTIME and value is not None else 0
        if not core(pfs.set_new_file_mtime, self.path, mtime_ns or None):
            return
        manager = self.provider.prop_manager
        if manager is not None:
            if value is None:
                manager.remove_property(self.get_ref_url(), name, False, self.environ)
            else:
                text = etree.tostring(value)
                manager.write_property(self.get_ref_url(), name, text, False, self.environ)

    def delete(self) -> None:
        core(self.provider.pfs.delete, self.path)
        self.remove_all_properties(recursive=True)
        self.remove_all_locks(recursive=True)

    def support_recursive_move(self, dest_path: str) -> bool:
        return True

    def move_recursive(self, dest_path: str) -> None:
        core(self.provider.pfs.move, self.path, dest_path, False)


class Folder(_Node, DAVCollection):
    def __init__(self, path: str, environ: dict[str, Any], attr: Attr) -> None:
        super().__init__(path, environ)
        self.attr = attr
        self._entries: list[Entry] | None = None

    def _listing(self) -> list[Entry]:
        if self._entries is None:
            self._entries = core(self.provider.pfs.list, self.path)
        return self._entries

    def get_member_names(self) -> list[str]:
        return [entry.name for entry in self._listing()]

    def get_member(self, name: str) -> Any:
        for entry in self._listing():
            if entry.name == name:
                return resource_of(_join(self.path, name), self.environ, entry.attr)
        return None

    def get_member_list(self) -> list[Any]:
        # One listing of the folder, the members' attributes with it: no call per member.
        return [
            resource_of(_join(self.path, e.name), self.environ, e.attr) for e in self._listing()
        ]

    def get_last_modified(self) -> float:
        return self.attr.mtime_ns / 1e9

    def create_empty_resource(self, name: str) -> Any:
        path = _join(self.path, name)
        if self.environ.get("REQUEST_METHOD") == "LOCK":
            # A lock on a name not made yet (RFC 4918 7.3): an empty file, as touch(1).
            fh = core(self.provider.pfs.open_write, path)
            core(self.provider.pfs.close, fh, True)
            return resource_of(path, self.environ, core(self.provider.pfs.stat, path))
        # Made by the PUT's open (``File.begin_write``): a file the mount creates and
        # writes at once, so a new document is made once, with its content.
        return File(path, self.environ, None)

    def create_collection(self, name: str) -> None:
        core(self.provider.pfs.mkdir, _join(self.path, name))

    def handle_delete(self) -> bool:
        # A link shown as its folder: the link goes, never what it leads to (WsgiDAV
        # would otherwise delete the folder's members one by one first).
        if core(self.provider.pfs.is_link, self.path):
            self.delete()
            return True
        return False

    def copy_move_single(self, dest_path: str, *, is_move: bool) -> None:
        if is_move:
            core(self.provider.pfs.move, self.path, dest_path, False)
        else:
            core(self.provider.pfs.mkdir, dest_path)


class File(_Node, DAVNonCollection):
    """A file of the tree; ``attr`` None: one a PUT is about to make."""

    def __init__(self, path: str, environ: dict[str, Any], attr: Attr | None) -> None:
        super().__init__(path, environ)
        self.attr = attr
        self._reading: io.RawIOBase | None = None

    def get_content_length(self) -> int:
        if self.attr is None:
            return 0
        if self.environ.get("REQUEST_METHOD") in ("GET", "HEAD") and self._reading is None:
            # A listing's size may be an estimate: the open learns the exact one.
            self._reading = self._open()
        return self.attr.size

    def _open(self) -> io.RawIOBase:
        """The content opened for reading; ``attr`` then has its exact size."""
        pfs = self.provider.pfs
        fh, shared, attr = core(pfs.open_read, self.path)
        reader = _Reader(pfs, fh, shared)
        if attr is not None:
            self.attr = attr
            return reader
        # No size is known before the end (a file the mount makes as it is read):
        # read whole, for the exact Content-Length.
        with reader:
            data = reader.readall()
        if self.attr is not None:
            self.attr = dataclasses.replace(self.attr, size=len(data))
        return io.BytesIO(data)  # type: ignore[return-value]

    def get_content_type(self) -> str:
        return "application/octet-stream"

    def get_property_value(self, name: str) -> Any:
        value = super().get_property_value(name)
        held_elsewhere = self.provider.held_elsewhere
        if name == "{DAV:}lockdiscovery" and len(value) == 0 and held_elsewhere is not None:
            holder = held_elsewhere(self.path)
            if holder is not None:
                value.append(_foreign_lock(self.get_href(), holder))
        return value

    def get_last_modified(self) -> float | None:
        return None if self.attr is None else self.attr.mtime_ns / 1e9

    def get_etag(self) -> str | None:
        return None if self.attr is None else etag_of(self.attr)

    def support_etag(self) -> bool:
        return True

    def support_ranges(self) -> bool:
        return True

    def get_content(self) -> io.RawIOBase:
        reader = self._reading if self._reading is not None else self._open()
        self._reading = None  # the caller closes it
        return reader

    def begin_write(self, *, content_type: str | None = None) -> io.RawIOBase:
        if self.provider.read_only:
            raise DAVError(HTTP_FORBIDDEN)
        fh = core(self.provider.pfs.open_write, self.path)
        return _Writer(self.provider.pfs, fh)

    def copy_move_single(self, dest_path: str, *, is_move: bool) -> None:
        if is_move:
            core(self.provider.pfs.move, self.path, dest_path, True)
            return
        # A copy is a read of this file and a PUT of the other: a save there.
        source = self.get_content()
        try:
            target = File(dest_path, self.environ, None)
            writer = target.begin_write()
            try:
                while chunk := source.read(_CHUNK):
                    writer.write(chunk)
            finally:
                writer.close()
        finally:
            source.close()


def etag_of(attr: Attr) -> str:
    """The etag of a file of attributes ``attr`` (its mtime and size)."""
    return f"{attr.mtime_ns:x}-{attr.size:x}"


def _http_date_ns(text: str | None) -> int:
    """An HTTP date (Explorer's Win32 times) in nanoseconds; 0 when not one."""
    try:
        return int(email.utils.parsedate_to_datetime(text or "").timestamp() * 1e9)
    except (TypeError, ValueError):
        return 0


def _foreign_lock(href: str, holder: str) -> Any:
    """The ``activelock`` of a check-out made elsewhere: exclusive, owned by
    ``holder``, without a token (not this front's to give; RFC 4918 14.1)."""
    lock = etree.Element("{DAV:}activelock")
    etree.SubElement(etree.SubElement(lock, "{DAV:}locktype"), "{DAV:}write")
    etree.SubElement(etree.SubElement(lock, "{DAV:}lockscope"), "{DAV:}exclusive")
    etree.SubElement(lock, "{DAV:}depth").text = "0"
    etree.SubElement(lock, "{DAV:}owner").text = holder
    etree.SubElement(lock, "{DAV:}timeout").text = "Infinite"
    etree.SubElement(etree.SubElement(lock, "{DAV:}lockroot"), "{DAV:}href").text = href
    return lock


class _Reader(io.RawIOBase):
    """An open file of the core read from a request thread (seekable: ranges)."""

    def __init__(self, pfs: PathFileSystem, fh: int, shared: bool) -> None:
        self._pfs, self._fh, self._shared = pfs, fh, shared
        self._offset = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_CUR:
            offset += self._offset
        elif whence != io.SEEK_SET:
            raise io.UnsupportedOperation("seek from the end")
        self._offset = offset
        return offset

    def tell(self) -> int:
        return self._offset

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            size = _CHUNK
        data: bytes = core(self._pfs.read, self._fh, self._offset, min(size, _CHUNK))
        self._offset += len(data)
        return data

    def close(self) -> None:
        if not self.closed and not self._shared:
            core(self._pfs.close, self._fh, False)
        super().close()


class _Writer(io.RawIOBase):
    """An open for writing of the core, written from a request thread; close() makes
    the content durable in the spool and checks it in (its errors are the PUT's)."""

    def __init__(self, pfs: PathFileSystem, fh: int) -> None:
        self._pfs, self._fh = pfs, fh
        self._offset = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        data = bytes(data)
        written: int = core(self._pfs.write, self._fh, self._offset, data)
        self._offset += written
        return written

    def close(self) -> None:
        if not self.closed:
            try:
                core(self._pfs.close, self._fh, True)
            finally:
                super().close()
