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
  in copyparty's issue 910 (github.com/9001/copyparty/issues/910). Microsoft's MS-WDV
  (WebDAV: Client Extensions) names the Win32 properties and their namespace.
- Office opening a URL: an OPTIONS of the folder (Protocol Discovery, user agent
  ``Microsoft Office Protocol Discovery``), a HEAD of the document (Existence
  Discovery), LOCK, each save a PUT with a tagged ``If`` (``<url> (<token>)``, RFC 4918
  10.4), UNLOCK: the sequence the issue this tier was made for names, as Office's
  open of a URL is described in Microsoft's Office protocol documentation.
- Word saving through a mapped drive: Microsoft's "Description of how Word creates
  temporary files" (the owner file ``~$NAME``, the new content in ``~WRD####.tmp``,
  the document renamed to ``~WRL####.tmp``, the temporary file renamed to the
  document's name, ``~WRL####.tmp`` deleted), each file call as the Mini-Redirector
  sends it (a new file as in the copy in above, a rename as MOVE, a delete as DELETE).
- Finder (webdavfs 3.0) copying a file in: a PUT of 0 bytes, LOCK, the content PUT with
  ``Transfer-Encoding: chunked`` and ``X-Expected-Entity-Length`` (Apple's open-source
  webdavfs; what servers do about it, e.g. cs3org/reva's ``handleMacOSFinder``), its
  AppleDouble ``._NAME`` file put beside it the same way, ``.DS_Store`` of the folder,
  UNLOCK.
- The overwrites (Explorer's Replace, Finder's) are not from a trace: the copy in on a
  name that exists, without the first PUT of 0 bytes (the file is there).
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
    kept = f"{folder}/attachments/minutes.txt"
    wait_until(lambda: dav.get(quote(kept)).status_code == 200, what="the attachment shown")
    assert dav.get(quote(kept)).content == content
    assert dav.get(quote(f"{folder}/minutes.txt")).status_code == 404
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


def test_explorer_copies_a_file_out(dav: httpx.Client, api: httpx.Client) -> None:
    """A copy out: PROPFIND of the file (Depth 0), then GET; nothing changes."""
    path = source_path(dav, 8)
    versions = version_count(api, 8)
    r = dav.request("PROPFIND", quote(path), headers={**EXPLORER, "Depth": "0"})
    assert r.status_code == 207, r.text
    assert dav.get(quote(path), headers=EXPLORER).content == latest_bytes(api, 8)
    assert version_count(api, 8) == versions
    assert record(api, 8)["document"]["locked__v"] is False


def test_explorer_makes_a_new_folder_renames_it_and_copies_a_file_into_it(
    dav: httpx.Client, api: httpx.Client
) -> None:
    """Explorer's New → Folder: MKCOL of "New folder", MOVE to the name typed; a file
    copied into it then makes the document, named after the folder."""
    before = documents(api)
    assert dav.request("MKCOL", quote("/General/New folder"), headers=EXPLORER).status_code == 201
    r = dav.request(
        "MOVE",
        quote("/General/New folder"),
        headers={
            **EXPLORER,
            "Destination": dav.base_url.join(quote("/General/Board Minutes")).__str__(),
            "Overwrite": "F",
        },
    )
    assert r.status_code == 201, r.text
    content = b"the board met\n" * 1000
    explorer_copies_in(dav, "/General/Board Minutes/minutes.txt", content)
    doc_id = one_new_document(api, before, content)
    assert record(api, doc_id)["document"]["name__v"] == "Board Minutes"


def test_explorer_renames_a_document_and_deletes_its_junk(
    dav: httpx.Client, api: httpx.Client
) -> None:
    """Rename (F2): a MOVE of the document's folder to the new name, Overwrite F;
    delete: DELETE, here of what Explorer left in the folder (a document itself stays:
    the front deletes documents only with --allow-delete, answered 403)."""
    path = source_path(dav, 15)
    folder = path.rsplit("/", 1)[0]
    parent = folder.rsplit("/", 1)[0]
    renamed = f"{parent}/Renamed by Explorer"
    r = dav.request(
        "MOVE",
        quote(folder + "/"),
        headers={**EXPLORER, "Destination": quote(renamed + "/"), "Overwrite": "F"},
    )
    assert r.status_code in (201, 204), r.text
    assert record(api, 15)["document"]["name__v"] == "Renamed by Explorer"
    assert dav.get(quote(f"{renamed}/{path.rsplit('/', 1)[1]}")).status_code == 200
    assert dav.put(quote(f"{renamed}/desktop.ini"), content=b"[.ShellClassInfo]").status_code == 201
    assert dav.delete(quote(f"{renamed}/desktop.ini"), headers=EXPLORER).status_code == 204
    assert dav.get(quote(f"{renamed}/desktop.ini")).status_code == 404
    # Refused: 403, or WsgiDAV's 207 naming the refused members.
    assert dav.delete(quote(renamed + "/"), headers=EXPLORER).status_code in (207, 403)
    assert record(api, 15)["document"]["name__v"] == "Renamed by Explorer"


def test_explorer_overwrites_a_document(dav: httpx.Client, api: httpx.Client) -> None:
    """A copy over an existing file (Replace): the sequence of a copy in on a name that
    is there, without the first PUT of 0 bytes (the file exists): one version."""
    path = source_path(dav, 16)
    versions = version_count(api, 16)
    content = os.urandom(40_000) + b"replaced by Explorer"
    token = lock(dav, path, EXPLORER)
    win32_proppatch(dav, path, token, ("Win32CreationTime", "Win32LastModifiedTime"))
    assert dav.head(quote(path), headers=EXPLORER).status_code == 200
    r = dav.put(quote(path), content=content, headers={**EXPLORER, "If": f"(<{token}>)"})
    assert r.status_code in (200, 204), r.text
    win32_proppatch(dav, path, token, ("Win32LastModifiedTime", "Win32FileAttributes"))
    unlock(dav, path, token, EXPLORER)
    answers_as_written(dav, path, content)
    assert version_count(api, 16) == versions + 1
    assert latest_bytes(api, 16) == content
    assert record(api, 16)["document"]["locked__v"] is False


# --- Office ---------------------------------------------------------------------------


def test_office_opens_a_url_and_saves_twice(dav: httpx.Client, api: httpx.Client) -> None:
    """Word opening ``http://…/report.docx`` (File → Open, a link): Protocol Discovery
    (OPTIONS of the folder), Existence Discovery (HEAD), LOCK, a PUT per save with a
    tagged If header, UNLOCK at close: one version per save, checked in between."""
    path = source_path(dav, 17)
    folder = path.rsplit("/", 1)[0] + "/"
    versions = version_count(api, 17)
    r = dav.request("OPTIONS", quote(folder), headers=DISCOVERY)
    assert r.status_code == 200 and "PROPFIND" in r.headers["Allow"]
    assert r.headers["MS-Author-Via"] == "DAV"
    assert dav.head(quote(path), headers=WORD).status_code == 200
    token = lock(dav, path, WORD)
    assert record(api, 17)["document"]["locked__v"] is True
    url = str(dav.base_url.join(quote(path)))
    for n in range(2):
        content = os.urandom(20_000) + f"save {n} by Word".encode()
        r = dav.put(quote(path), content=content, headers={**WORD, "If": f"<{url}> (<{token}>)"})
        assert r.status_code in (200, 204), r.text
        assert version_count(api, 17) == versions + n + 1
        assert latest_bytes(api, 17) == content
        assert record(api, 17)["document"]["locked__v"] is True
    unlock(dav, path, token, WORD)
    assert record(api, 17)["document"]["locked__v"] is False


def test_word_saves_through_a_mapped_drive(dav: httpx.Client, api: httpx.Client) -> None:
    """Word saving a document opened from a drive letter mapped to the front (the
    Mini-Redirector carries Word's file calls): its owner file ``~$NAME`` while the
    document is open (the check-out, as on the mount), the new content written to a
    temporary file, then the rename dance: the document to ``~WRL0001.tmp``, the
    temporary file to the document's name, ``~WRL0001.tmp`` deleted; at close the owner
    file deleted. One version, the exact bytes, checked in at the end."""
    path = source_path(dav, 18)
    folder, name = path.rsplit("/", 1)
    versions = version_count(api, 18)
    owner = f"{folder}/~${name}"
    explorer_copies_in(dav, owner, b"\x0cWord User" + b"\x00" * 150)
    assert record(api, 18)["document"]["locked__v"] is True  # the owner file's check-out
    content = os.urandom(30_000) + b"saved by Word"
    temporary = f"{folder}/~WRD0000.tmp"
    explorer_copies_in(dav, temporary, content)

    def move(old: str, new: str) -> None:
        r = dav.request(
            "MOVE", quote(old), headers={**EXPLORER, "Destination": quote(new), "Overwrite": "T"}
        )
        assert r.status_code in (201, 204), (old, new, r.text)

    move(path, f"{folder}/~WRL0001.tmp")
    move(temporary, path)
    assert dav.delete(quote(f"{folder}/~WRL0001.tmp"), headers=EXPLORER).status_code == 204
    answers_as_written(dav, path, content)
    assert dav.delete(quote(owner), headers=EXPLORER).status_code == 204
    assert version_count(api, 18) == versions + 1
    assert latest_bytes(api, 18) == content
    assert record(api, 18)["document"]["locked__v"] is False
