"""Windows Explorer, Word, Office and macOS Finder on the front, request for request.

No Windows or macOS runs here: each test replays against a real ``vaultfs webdav``
what one of those clients sends for one thing a user does, from public traces of the
client and its own sources (each test names where its sequence comes from), with the
headers the client sends that matter (its ``User-Agent``: WsgiDAV treats Explorer's
differently; ``If`` with the lock token). Each is checked in the vault: one document
per new file, one version per save, the exact bytes, nothing left checked out; and the
name the client wrote answers right after, as the client asks for it.

Sources:

- Explorer (Mini-Redirector 10.0) copying a file in: a PROPFIND of the new name (404),
  a PUT of 0 bytes, LOCK of the name, PROPPATCH of ``Win32CreationTime``,
  ``Win32LastAccessTime``, ``Win32LastModifiedTime``, ``Win32FileAttributes``, HEAD,
  the PUT of the content, a PROPPATCH of the last-modified time and attributes, UNLOCK:
  the trace in WsgiDAV's issue 112 (github.com/mar10/wsgidav/issues/112, "Last
  modified timestamp not preserved in Windows"), the PROPPATCH body as Explorer sends it
  in copyparty's issue 910 (github.com/9001/copyparty/issues/910), and MS-WDV 2.2.1
  (the Win32 properties, their namespace ``urn:schemas-microsoft-com:``).
- Office opening a URL: an OPTIONS of the folder (Protocol Discovery, user agent
  ``Microsoft Office Protocol Discovery``), a HEAD of the document (Existence
  Discovery), LOCK, each save a PUT with a tagged ``If`` (``<url> (<token>)``), UNLOCK:
  MS-OFFDI (Office File Open Discovery) and MS-WDV 3.2.5.1 (the If header of a PUT).
- Finder (webdavfs 3.0) copying a file in: a PUT of 0 bytes, LOCK, the content PUT with
  ``Transfer-Encoding: chunked`` and ``X-Expected-Entity-Length`` (Apple's open-source
  webdavfs; what servers do about it, e.g. cs3org/reva's ``handleMacOSFinder``), its
  AppleDouble ``._NAME`` file put beside it the same way, ``.DS_Store`` of the folder,
  UNLOCK.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest

from tests.webdav.test_webdav_front import (
    latest_bytes,
    lock_body,
    propfind,
    record,
    source_path,
    version_count,
)
from vaultfs.bridge.write.drops import GRACE
from vaultfs.testing.vault_process import wait_until

EXPLORER = {"User-Agent": "Microsoft-WebDAV-MiniRedir/10.0.19045", "translate": "f"}
FINDER = {"User-Agent": "WebDAVFS/3.0.0 (03008000) Darwin/21.6.0 (x86_64)"}
WORD = {"User-Agent": "Microsoft Office Word 2014 (16.0.17328) Windows NT 10.0"}
DISCOVERY = {"User-Agent": "Microsoft Office Protocol Discovery"}
MS = "urn:schemas-microsoft-com:"
WIN32_TIMES = "Thu, 09 Oct 2025 17:54:43 GMT"


@pytest.fixture
def api(module_api: httpx.Client) -> httpx.Client:
    return module_api


def documents(api: httpx.Client) -> set[int]:
    listed = api.get("/objects/documents").json()["documents"]
    return {int(d["document"]["id"]) for d in listed}


def made_since(api: httpx.Client, before: set[int]) -> list[int]:
    return sorted(documents(api) - before)


def lock(dav: httpx.Client, path: str, headers: dict[str, str]) -> str:
    r = dav.request(
        "LOCK",
        quote(path),
        headers={**headers, "Timeout": "Second-3600", "Depth": "0"},
        content=lock_body(),
    )
    assert r.status_code in (200, 201), r.text
    return r.headers["Lock-Token"]


def unlock(dav: httpx.Client, path: str, token: str, headers: dict[str, str]) -> None:
    r = dav.request("UNLOCK", quote(path), headers={**headers, "Lock-Token": token})
    assert r.status_code == 204, r.text


def win32_proppatch(
    dav: httpx.Client, path: str, token: str, names: tuple[str, ...], when: str = WIN32_TIMES
) -> None:
    """Explorer's PROPPATCH of its Win32 properties: 207, each one 200."""
    values = {
        "Win32CreationTime": when,
        "Win32LastAccessTime": when,
        "Win32LastModifiedTime": when,
        "Win32FileAttributes": "00000020",
    }
    props = "".join(f"<Z:{n}>{values[n]}</Z:{n}>" for n in names)
    body = (
        '<?xml version="1.0" encoding="utf-8" ?><D:propertyupdate xmlns:D="DAV:" '
        f'xmlns:Z="{MS}"><D:set><D:prop>{props}</D:prop></D:set></D:propertyupdate>'
    )
    r = dav.request(
        "PROPPATCH", quote(path), headers={**EXPLORER, "If": f"(<{token}>)"}, content=body
    )
    assert r.status_code == 207, r.text
    statuses = {
        prop.tag: propstat.findtext("{DAV:}status")
        for propstat in ET.fromstring(r.content).iter("{DAV:}propstat")
        for prop in propstat.find("{DAV:}prop") or []
    }
    assert statuses == {f"{{{MS}}}{n}": "HTTP/1.1 200 OK" for n in names}, r.text


def answers_as_written(dav: httpx.Client, path: str, content: bytes) -> None:
    """The name the client wrote answers PROPFIND, HEAD and GET with what it wrote."""
    found = propfind(dav, path, ["{DAV:}getcontentlength"], depth="0")
    assert found[path]["{DAV:}getcontentlength"] == str(len(content))
    head = dav.head(quote(path))
    assert head.status_code == 200 and head.headers["Content-Length"] == str(len(content))
    assert dav.get(quote(path)).content == content


def one_new_document(api: httpx.Client, before: set[int], content: bytes) -> int:
    """Exactly one document was made since ``before``: one version holding ``content``,
    not checked out."""
    made = made_since(api, before)
    assert len(made) == 1, made
    doc_id = made[0]
    assert version_count(api, doc_id) == 1
    assert latest_bytes(api, doc_id) == content
    assert record(api, doc_id)["document"]["locked__v"] is False
    return doc_id


def explorer_copies_in(dav: httpx.Client, path: str, content: bytes) -> None:
    """Explorer's copy of a new file to ``path`` (the sequence of WsgiDAV's issue 112),
    checking at each step that the name answers as Explorer left it."""
    r = dav.request("PROPFIND", quote(path), headers={**EXPLORER, "Depth": "0"})
    assert r.status_code == 404
    r = dav.put(quote(path), content=b"", headers=EXPLORER)
    assert r.status_code == 201, r.text
    answers_as_written(dav, path, b"")
    token = lock(dav, path, EXPLORER)
    every = ("Win32CreationTime", "Win32LastAccessTime", "Win32LastModifiedTime")
    win32_proppatch(dav, path, token, (*every, "Win32FileAttributes"))
    head = dav.head(quote(path), headers=EXPLORER)
    assert head.status_code == 200, head.text
    r = dav.put(quote(path), content=content, headers={**EXPLORER, "If": f"(<{token}>)"})
    assert r.status_code in (200, 201, 204), r.text
    answers_as_written(dav, path, content)
    win32_proppatch(dav, path, token, ("Win32LastModifiedTime", "Win32FileAttributes"))
    unlock(dav, path, token, EXPLORER)
    # Explorer then looks at what it copied.
    answers_as_written(dav, path, content)


# --- Explorer -------------------------------------------------------------------------


def test_explorer_copies_a_new_file_into_a_folder(dav: httpx.Client, api: httpx.Client) -> None:
    before = documents(api)
    content = os.urandom(70_000) + b"copied by Explorer"
    explorer_copies_in(dav, "/General/Copied by Explorer.bin", content)
    doc_id = one_new_document(api, before, content)
    # The name Explorer wrote is the document's file a while, then the document's
    # folder is where it is.
    wait_until(
        lambda: dav.head(quote("/General/Copied by Explorer.bin")).status_code == 404,
        timeout=GRACE * 6,
        what="the name Explorer wrote to go once its grace is over",
    )
    assert dav.get(quote(source_path(dav, doc_id))).content == content
    assert version_count(api, doc_id) == 1


def test_explorer_copies_an_empty_file(dav: httpx.Client, api: httpx.Client) -> None:
    before = documents(api)
    explorer_copies_in(dav, "/General/Empty by Explorer.txt", b"")
    one_new_document(api, before, b"")


def test_an_empty_put_alone_becomes_a_document_after_its_grace(
    dav: httpx.Client, api: httpx.Client
) -> None:
    before = documents(api)
    path = "/General/Touched.txt"
    assert dav.put(quote(path), content=b"").status_code == 201
    answers_as_written(dav, path, b"")
    wait_until(lambda: made_since(api, before), timeout=GRACE * 6, what="the empty document")
    one_new_document(api, before, b"")


def test_win32_times_show_on_a_new_file_and_are_taken_on_a_document(
    dav: httpx.Client, api: httpx.Client
) -> None:
    path = "/General/~$Win32 times.docx"  # a temporary name: a scratch file for good
    assert dav.put(quote(path), content=b"owner", headers=EXPLORER).status_code == 201
    token = lock(dav, path, EXPLORER)
    try:
        win32_proppatch(dav, path, token, ("Win32CreationTime", "Win32LastModifiedTime"))
        modified = f"{{{MS}}}Win32LastModifiedTime"
        found = propfind(dav, path, ["{DAV:}getlastmodified", modified], depth="0")[path]
        assert found["{DAV:}getlastmodified"] == WIN32_TIMES
        assert found[modified] == WIN32_TIMES
    finally:
        unlock(dav, path, token, EXPLORER)
    # A document's times are the vault's: taken (200), not kept.
    source = source_path(dav, 4)
    before = propfind(dav, source, ["{DAV:}getlastmodified"], depth="0")[source]
    versions = version_count(api, 4)
    token = lock(dav, source, EXPLORER)
    try:
        win32_proppatch(dav, source, token, ("Win32LastModifiedTime", "Win32FileAttributes"))
    finally:
        unlock(dav, source, token, EXPLORER)
    assert propfind(dav, source, ["{DAV:}getlastmodified"], depth="0")[source] == before
    assert version_count(api, 4) == versions


def test_explorer_drops_a_file_into_a_documents_folder(
    dav: httpx.Client, api: httpx.Client
) -> None:
    """A file copied into a document's folder becomes its attachment once its lock
    ended and the drop's grace is over; until then it answers as Explorer wrote it."""
    folder = source_path(dav, 6).rsplit("/", 1)[0]
    before = documents(api)
    content = b"minutes of the meeting\n" * 100
    explorer_copies_in(dav, f"{folder}/minutes.txt", content)
    assert made_since(api, before) == []

    def attached() -> bool:
        listed = api.get("/objects/documents/6/attachments").json().get("data") or []
        return any(a.get("filename__v") == "minutes.txt" for a in listed)

    wait_until(attached, timeout=GRACE * 6, what="the dropped file to be attached")
    assert dav.get(quote(f"{folder}/attachments/minutes.txt")).content == content
    assert record(api, 6)["document"]["locked__v"] is False


def test_explorer_and_finder_junk_never_becomes_a_document(
    dav: httpx.Client, api: httpx.Client
) -> None:
    before = documents(api)
    folder = source_path(dav, 7).rsplit("/", 1)[0]
    for path in (
        "/General/desktop.ini",
        "/General/Thumbs.db",
        f"{folder}/Thumbs.db",
        "/General/.DS_Store",
        "/General/._Junk.docx",
        f"{folder}/._minutes.txt",
    ):
        headers = FINDER if "/." in path else EXPLORER
        content = os.urandom(4096)
        assert dav.put(quote(path), content=b"", headers=headers).status_code in (201, 204)
        token = lock(dav, path, headers)
        r = dav.put(quote(path), content=content, headers={**headers, "If": f"(<{token}>)"})
        assert r.status_code in (200, 201, 204), (path, r.text)
        unlock(dav, path, token, headers)
        answers_as_written(dav, path, content)
    wait_until(
        lambda: dav.get(quote(f"{folder}/Thumbs.db")).status_code == 200,
        what="junk still there",
    )
    assert made_since(api, before) == []
    listed = api.get("/objects/documents/7/attachments").json().get("data") or []
    assert not [a for a in listed if a.get("filename__v") in ("Thumbs.db", "._minutes.txt")]


# --- Finder ---------------------------------------------------------------------------


def chunked(content: bytes, size: int = 16_384) -> Iterator[bytes]:
    for start in range(0, len(content), size):
        yield content[start : start + size]


def finder_writes(dav: httpx.Client, path: str, content: bytes, *, new: bool) -> None:
    """webdavfs writing ``path``: a new file is made with a PUT of 0 bytes first; then
    LOCK, the content chunked with ``X-Expected-Entity-Length``, UNLOCK."""
    if new:
        r = dav.request("PROPFIND", quote(path), headers={**FINDER, "Depth": "0"})
        assert r.status_code == 404
        assert dav.put(quote(path), content=b"", headers=FINDER).status_code == 201
        answers_as_written(dav, path, b"")
    token = lock(dav, path, FINDER)
    headers = {**FINDER, "If": f"(<{token}>)", "X-Expected-Entity-Length": str(len(content))}
    r = dav.put(quote(path), content=chunked(content), headers=headers)
    assert r.status_code in (200, 201, 204), r.text
    answers_as_written(dav, path, content)
    unlock(dav, path, token, FINDER)
    answers_as_written(dav, path, content)


def test_finder_copies_a_file_in_with_its_appledouble_file(
    dav: httpx.Client, api: httpx.Client
) -> None:
    before = documents(api)
    content = os.urandom(200_000) + b"copied by Finder"
    finder_writes(dav, "/General/Copied by Finder.bin", content, new=True)
    apple_double = b"\x00\x05\x16\x07" + os.urandom(4092)
    finder_writes(dav, "/General/._Copied by Finder.bin", apple_double, new=True)
    finder_writes(dav, "/General/.DS_Store", os.urandom(6148), new=False)
    doc_id = one_new_document(api, before, content)
    # Finder overwrites the file (Replace): its lock, the whole content, UNLOCK.
    again = os.urandom(150_000) + b"replaced by Finder"
    finder_writes(dav, "/General/Copied by Finder.bin", again, new=False)
    assert version_count(api, doc_id) == 2
    assert latest_bytes(api, doc_id) == again
    assert record(api, doc_id)["document"]["locked__v"] is False
    assert made_since(api, before) == [doc_id]
    assert dav.get(quote("/General/._Copied by Finder.bin")).content == apple_double
