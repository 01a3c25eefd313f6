"""PROPFIND Depth 1 of a folder, answered as it is listed: page after page, never whole.

Owns the answer to a PROPFIND with ``Depth: 1`` of a folder asking for named
properties or all of them. WsgiDAV builds the whole multistatus of such a request in
memory (every member's resource, an element tree of every property, then the bytes of
all of it) before it sends a byte: a folder of 10,000 documents took 3 s and 95 MiB
of front here, and the time and memory grow with the folder. Here the folder is
listed a readdir batch at a time (``PathFileSystem.open_listing``: from the index, as
the mount lists it), and each batch's ``<response>`` elements are written and sent
before the next is read. Each property's value is the resource's own (``resources``:
what WsgiDAV would answer, through the same methods), written as text: the common
live properties (kind, size, modification time, etag, name) straight from the
listing's attributes, any other through the resource's ``get_property_value``
(fields, locks, dead properties), so only what the client asked for is computed. The
answer is chunked (its length is not known before its end).

The front keeps what it listed, as the mount's kernel keeps a listing: each answer is
written, as it is sent, to a private file of the front's cache (``Listings``), and the
same PROPFIND of the same folder is answered from that file (with its length) until
anything changes: the index learns a change (a poll, a save, a field), an exact size is
learned, a name the front kept for a client goes, a lock expires, or a request that may
change something comes (any method but GET, HEAD, OPTIONS and PROPFIND); and a minute
at most (a name hidden for a minute shows again). At most ``_KEPT`` answers are kept.

A folder's listing is a walk of its client (``tree.walks``, named by ``_client_of``:
its program and address), as a process's listing is on the mount: what only a walk
needs (a document's ``versions/``, ``renditions/``...) is paid from the walks' share,
and a crawl of the whole vault past it is refused with 507. The first page is read
before the status is sent, so a refusal (or the vault away: 503) is the answer's
status, never a multistatus cut short.

What this does not take (a PROPFIND for property names, an ``If`` header, a body that
is not a propfind, a path that is no folder) goes to WsgiDAV as before.
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote
from xml.sax.saxutils import escape

from wsgidav import util
from wsgidav.dav_error import DAVError
from wsgidav.xml_tools import etree

from vaultfs import errors
from vaultfs.bridge.fs.by_path import Entry
from vaultfs.bridge.webdav.calls import core
from vaultfs.bridge.webdav.resources import VaultProvider, etag_of, resource_of

__all__ = ["Listings", "streamed_listing"]

log = logging.getLogger(__name__)

#: the characters WsgiDAV leaves unquoted in an href (``_DAVResource.get_href``)
_SAFE = "/" + "!*'()," + "$-_|."
_OK = "HTTP/1.1 200 OK"
_HEAD = b'<?xml version="1.0" encoding="utf-8" ?>\n<D:multistatus xmlns:D="DAV:">'
_TAIL = b"</D:multistatus>"
#: what an answer is sent in: about this many bytes a write
_CHUNK = 256 << 10
#: the methods that change nothing (the others drop every kept answer)
_READS = frozenset({"GET", "HEAD", "OPTIONS", "PROPFIND"})
#: answers kept at most, and for how long at most (seconds: a hidden name's minute)
_KEPT = 16
_KEEP_FOR = 60.0
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass
class _Kept:
    path: Path
    size: int
    stamp: int
    made: float


class Listings:
    """The answers kept in ``directory`` (private), and what drops them: ``changed``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._stamp = 0
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, ...], _Kept] = OrderedDict()

    def changed(self, *_: object) -> None:
        """Something may have changed: no kept answer is given again."""
        with self._lock:
            self._stamp += 1

    @property
    def stamp(self) -> int:
        return self._stamp

    def kept(self, key: tuple[str, ...]) -> _Kept | None:
        """The kept answer of ``key``, when still true."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is None:
                return None
            if kept.stamp == self._stamp and time.monotonic() - kept.made < _KEEP_FOR:
                self._kept.move_to_end(key)
                return kept
            del self._kept[key]
        kept.path.unlink(missing_ok=True)
        return None

    def new_file(self) -> IO[bytes]:
        """A private file an answer is written to while it is sent."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        return tempfile.NamedTemporaryFile(dir=self.directory, delete=False)

    def keep(self, key: tuple[str, ...], path: Path, size: int, stamp: int) -> None:
        """The answer of ``key`` written whole to ``path``, made while the stamp was
        ``stamp``: kept, unless something changed meanwhile."""
        gone = [path]
        with self._lock:
            if stamp == self._stamp:
                gone = []
                old = self._kept.pop(key, None)
                if old is not None:
                    gone.append(old.path)
                self._kept[key] = _Kept(path, size, stamp, time.monotonic())
                while len(self._kept) > _KEPT:
                    gone.append(self._kept.popitem(last=False)[1].path)
        for unused in gone:
            unused.unlink(missing_ok=True)


def streamed_listing(
    app: Any, provider: VaultProvider, config: dict[str, Any], listings: Listings
) -> Any:
    """``app`` (WsgiDAV) with a PROPFIND Depth 1 of a folder answered here, streamed,
    and kept in ``listings``; every request that may change something drops what
    ``listings`` keeps. ``config``: WsgiDAV's, which its resources read."""

    def listing(environ: dict[str, Any], start_response: Any) -> Any:
        method = environ.get("REQUEST_METHOD")
        if method not in _READS:
            listings.changed()
            try:
                return app(environ, start_response)
            finally:
                listings.changed()
        if method != "PROPFIND" or environ.get("HTTP_DEPTH", "").strip() != "1":
            return app(environ, start_response)
        if "HTTP_IF" in environ:
            return app(environ, start_response)
        asked = _asked(environ)
        if asked is None:
            return app(environ, start_response)
        stamp = listings.stamp
        try:
            path = util.normalize_path(util.re_encode_wsgi(environ.get("PATH_INFO") or "/"))
        except DAVError:
            return app(environ, start_response)  # WsgiDAV answers it
        folder = path.rstrip("/") or "/"
        key = (folder, *asked)
        headers = [
            ("Content-Type", "application/xml; charset=utf-8"),
            ("Date", util.get_rfc1123_time()),
        ]
        kept = listings.kept(key)
        if kept is not None:
            try:
                answer = _from_file(kept.path)
            except FileNotFoundError:
                pass  # dropped meanwhile: listed again
            else:
                start_response("207 Multi-Status", [*headers, ("Content-Length", str(kept.size))])
                return answer
        try:
            attr = core(provider.pfs.stat, path)
        except DAVError:
            return app(environ, start_response)  # WsgiDAV answers it (404...)
        if not stat.S_ISDIR(attr.mode):
            return app(environ, start_response)
        environ = {
            **environ,
            "PATH_INFO": path,
            "wsgidav.provider": provider,
            "wsgidav.config": config,
        }
        made = _Answer(provider, environ, folder, Entry("", attr), asked)
        try:
            # Its first page before the status: a refusal (the walks' share spent: 507;
            # the vault away: 503) is the answer's status, never a short multistatus.
            made.open(_client_of(environ))
        except DAVError as exc:
            return util.send_status_response(environ, start_response, exc)
        start_response("207 Multi-Status", headers)
        return _keeping(made, listings, key, stamp)

    return listing


def _client_of(environ: dict[str, Any]) -> str:
    """The client a request comes from, as the walks' share names it: its address and
    its program (the first word of its User-Agent, printable and short: it is the
    client's to choose, and goes into the log and the status)."""
    agent = (environ.get("HTTP_USER_AGENT") or "").split(" ", 1)[0]
    agent = "".join(c for c in agent if c.isprintable())[:40] or "a WebDAV client"
    return f"{agent} at {environ.get('REMOTE_ADDR') or 'an unknown address'}"


def _from_file(path: Path) -> Iterator[bytes]:
    """A kept answer, read a chunk at a time (opened now: FileNotFoundError if gone)."""
    file = open(path, "rb")  # noqa: SIM115 (closed by the generator)

    def chunks() -> Iterator[bytes]:
        with file:
            while chunk := file.read(1 << 20):
                yield chunk

    return chunks()


def _keeping(
    answer: _Answer, listings: Listings, key: tuple[str, ...], stamp: int
) -> Iterator[bytes]:
    """``answer`` as it is made, written to a file of ``listings`` too, and kept when it
    ended whole and nothing changed meanwhile."""
    file = listings.new_file()
    size = 0
    whole = False
    made = answer.chunks()
    try:
        for chunk in made:
            file.write(chunk)
            size += len(chunk)
            yield chunk
        whole = True
    finally:
        # Closed here, in the request's thread: its listing is closed in the core now
        # (a client gone in the middle), not whenever it is collected.
        made.close()
        file.close()
        if whole and not answer.cut:
            listings.keep(key, Path(file.name), size, stamp)
        else:
            os.unlink(file.name)


def _asked(environ: dict[str, Any]) -> list[str] | None:
    """The properties a PROPFIND asks for ([] for all of them); None for what WsgiDAV
    answers itself (property names, a body that is no propfind). The body is whole
    and small (``bodies.XML_LIMIT``), and read again by WsgiDAV when it answers."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    environ["wsgi.input"].seek(0)
    if not body.strip():
        return []  # RFC 4918: an empty body asks for all properties
    try:
        root = etree.fromstring(body)
    except Exception:  # not XML: WsgiDAV answers it (400)
        return None
    if root.tag != "{DAV:}propfind" or len(root) != 1:
        return None
    (mode,) = root
    if mode.tag == "{DAV:}allprop":
        return []
    if mode.tag == "{DAV:}prop" and len(mode):
        return [child.tag for child in mode]
    return None


class _Answer:
    """The multistatus of a folder and its members, made a page of the listing at a
    time; ``cut``: it ended early (a core error after the status was sent)."""

    def __init__(
        self, provider: VaultProvider, environ: dict[str, Any], path: str, top: Entry,
        asked: list[str],
    ) -> None:  # fmt: skip
        self.provider, self.environ, self.path, self.top = provider, environ, path, top
        self.asked = asked
        self.cut = False
        self._listing: Any = None
        self._first: list[Entry] = []

    def open(self, client: str) -> None:
        """Open the folder's listing for ``client`` (whose walk pays for its calls) and
        read its first page; a core error is raised as its DAVError, and nothing is
        left open then."""
        pfs = self.provider.pfs
        listing = core(pfs.open_listing, self.path, client)
        try:
            self._first = core(pfs.next_page, listing)
        except BaseException:
            core(_close, pfs, listing)
            raise
        self._listing = listing

    def chunks(self) -> Generator[bytes, None, None]:
        pfs, environ, path, asked = self.provider.pfs, self.environ, self.path, self.asked
        pending = [_HEAD, _response(environ, path, "", self.top, asked)]
        size = sum(map(len, pending))
        prefix = path.rstrip("/") + "/"
        quoted = quote(prefix, safe=_SAFE)
        listing, page = self._listing, self._first
        try:
            while page:
                for entry in page:
                    written = _response(environ, prefix + entry.name, quoted, entry, asked)
                    pending.append(written)
                    size += len(written)
                    if size >= _CHUNK:
                        yield b"".join(pending)
                        pending, size = [], 0
                page = core(pfs.next_page, listing)
        except (DAVError, errors.VaultError, OSError) as exc:
            # The status is sent: the answer ends here, short (a client sees it cut).
            log.warning("webdav: the listing of %s ended early: %s", path, exc)
            self.cut = True
            yield b"".join(pending)
            return
        finally:
            core(_close, pfs, listing)
        pending.append(_TAIL)
        yield b"".join(pending)


async def _close(pfs: Any, listing: Any) -> None:
    pfs.close_listing(listing)


def _response(
    environ: dict[str, Any], path: str, quoted_parent: str, entry: Entry, asked: list[str]
) -> bytes:
    """One ``<response>``: the href, a propstat for the properties found and one for
    each error status (as WsgiDAV's ``add_property_response``). ``quoted_parent``: the
    href of the folder a member is in ("" for the folder itself). The resource is made
    only for a property the listing's attributes do not give (WsgiDAV's answer)."""
    resource: Any = None
    if not asked:
        resource = resource_of(path, environ, entry.attr)
        asked = resource.get_property_names(is_allprop=True)
    found: list[str] = []
    failed: dict[str, list[str]] = {}
    for name in asked:
        value = _live(entry, name)
        if value is None:
            if resource is None:
                resource = resource_of(path, environ, entry.attr)
            try:
                value = resource.get_property_value(name)
            except DAVError as exc:
                value = exc
        if value is _MISSING:
            failed.setdefault("404 Not Found", []).append(_element(name, None))
        elif isinstance(value, DAVError):
            status = util.get_http_status_string(value)
            failed.setdefault(status, []).append(_element(name, None))
        else:
            found.append(_element(name, value))
    if quoted_parent:
        href = quoted_parent + quote(entry.name, safe=_SAFE) + ("/" if entry.is_dir else "")
    else:
        href = quote(path.rstrip("/") + "/", safe=_SAFE)  # the folder itself
    parts = [f"<D:response><D:href>{escape(href)}</D:href>"]
    if found:
        parts.append(_propstat(found, _OK))
    for status, elements in failed.items():
        parts.append(_propstat(elements, f"HTTP/1.1 {status}"))
    parts.append("</D:response>")
    return "".join(parts).encode()


def _propstat(elements: list[str], status: str) -> str:
    props = "".join(elements)
    return f"<D:propstat><D:prop>{props}</D:prop><D:status>{status}</D:status></D:propstat>"


#: a live property the resource has no value of (WsgiDAV answers it 404)
_MISSING = object()


def _live(entry: Entry, name: str) -> Any:
    """A common live property of ``entry`` from its attributes, as WsgiDAV makes it
    of the same methods of the resource (``resources``): ``_MISSING`` where WsgiDAV
    answers 404; None for a property this does not know."""
    if name == "{DAV:}resourcetype":
        return _COLLECTION if entry.is_dir else ""
    if name == "{DAV:}getlastmodified":
        return _http_date(entry.attr.mtime_ns / 1e9)
    if name == "{DAV:}getcontentlength":
        return _MISSING if entry.is_dir else str(entry.attr.size)
    if name == "{DAV:}getetag":
        return _MISSING if entry.is_dir else etag_of(entry.attr)
    if name == "{DAV:}displayname" and entry.name:
        return entry.name
    return None


def _http_date(seconds: float) -> str:
    """RFC 1123's date (WsgiDAV's ``get_rfc1123_time``, without its detour through
    ``email.utils``: a tenth of the time)."""
    t = time.gmtime(seconds)
    return (
        f"{_DAYS[t.tm_wday]}, {t.tm_mday:02d} {_MONTHS[t.tm_mon - 1]} {t.tm_year} "
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} GMT"
    )


#: ``<resourcetype>`` of a folder, as text (``_element`` writes it as it is)
_COLLECTION = object()
_COLLECTION_XML = "<D:resourcetype><D:collection/></D:resourcetype>"


def _element(name: str, value: Any) -> str:
    """The XML of property ``name`` with ``value`` (text, an element, or None)."""
    if value is _COLLECTION:
        return _COLLECTION_XML
    if value is not None and not isinstance(value, str):
        text: str = etree.tostring(value, encoding="unicode")
        return text
    namespace, _, local = name[1:].partition("}")
    if namespace == "DAV:":
        tag, declared = f"D:{local}", ""
    else:
        tag, declared = f"X:{local}", f' xmlns:X="{escape(namespace, {chr(34): "&quot;"})}"'
    if not value:
        return f"<{tag}{declared}/>"
    return f"<{tag}{declared}>{escape(value)}</{tag}>"
