"""A folder's PROPFIND Depth 1 on the front: streamed a page of the listing at a time,
each member's properties what WsgiDAV answers for it alone, kept until anything
changes, and its size against Explorer's limit on an answer."""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import httpx
import pytest

from tests.webdav.test_clients_emulated import EXPLORER, lock, unlock, win32_proppatch
from tests.webdav.test_webdav_front import ID, api_calls, lock_body, source_path
from vaultfs.bridge.webdav.listing import _KEPT, Listings
from vaultfs.testing.vault_process import VaultProcess
from vaultfs.testing.webdav_process import WebdavProcess

MS = "urn:schemas-microsoft-com:"
#: Explorer's default ``FileAttributesLimitInBytes``: the largest answer it reads
EXPLORER_LIMIT = 1_000_000
#: what Finder and most clients ask of each member
COMMON = ["resourcetype", "getcontentlength", "getlastmodified", "creationdate", "getetag"]


def body(props: list[str] | None) -> str:
    """A propfind of ``props`` (``{ns}name``, or a DAV: name), all of them for None."""
    if props is None:
        return '<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>'
    asked = "".join(
        f'<x:{p.split("}")[1]} xmlns:x="{p[1:].split("}")[0]}"/>' if p.startswith("{")
        else f"<D:{p}/>"
        for p in props
    )  # fmt: skip
    return f'<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop>{asked}</D:prop></D:propfind>'


def answers(content: bytes) -> dict[str, dict[tuple[str, str], str]]:
    """href (unquoted) -> {(status, property): its value as text (children named)}."""
    found: dict[str, dict[tuple[str, str], str]] = {}
    for response in ET.fromstring(content).iter("{DAV:}response"):
        href = unquote(response.findtext("{DAV:}href") or "")
        values = {}
        for propstat in response.iter("{DAV:}propstat"):
            status = (propstat.findtext("{DAV:}status") or "").split(" ", 1)[1]
            for prop in propstat.find("{DAV:}prop") or []:
                inner = " ".join(sorted(e.tag for e in prop.iter() if e is not prop))
                values[(status, prop.tag)] = (prop.text or "").strip() + inner
        found[href] = values
    return found


def propfind(dav: httpx.Client, path: str, props: list[str] | None, depth: str) -> httpx.Response:
    r = dav.request("PROPFIND", quote(path), headers={"Depth": depth}, content=body(props))
    assert r.status_code == 207, r.text
    return r


@pytest.mark.parametrize(
    "props",
    [
        None,
        [*COMMON, "displayname", "getcontenttype", "lockdiscovery", "supportedlock"],
        [*COMMON, ID, f"{{{MS}}}Win32CreationTime", f"{{{MS}}}Win32FileAttributes", "{x:}none"],
    ],
    ids=["allprop", "live", "fields-win32-unknown"],
)
def test_each_member_is_answered_as_on_its_own(dav: httpx.Client, props: list[str] | None) -> None:
    """The streamed listing says of each member what WsgiDAV says of it alone (Depth
    0): a document's folder, its source file (its fields), a new file with Explorer's
    Win32 times and a lock, a folder."""
    folder = source_path(dav, 2).rsplit("/", 1)[0] + "/"
    new = folder + "desktop.ini"
    assert dav.put(quote(new), content=b"[.ShellClassInfo]").status_code in (201, 204)
    odd = folder + "._Résumé & <€> (1).docx"  # escaped in the href, the name not
    assert dav.put(quote(odd), content=b"\x00\x05\x16\x07").status_code in (201, 204)
    token = lock(dav, new, EXPLORER)
    try:
        win32_proppatch(dav, new, token, ("Win32CreationTime", "Win32FileAttributes"))
        listed = answers(propfind(dav, folder, props, "1").content)
        assert {new, odd, folder} <= listed.keys() and len(listed) >= 6
        for href, values in listed.items():
            alone = answers(propfind(dav, href, props, "0").content)
            assert alone == {href: values}, href
    finally:
        unlock(dav, new, token, EXPLORER)


def test_a_listing_is_kept_until_something_changes(dav: httpx.Client) -> None:
    """Listed again, a folder is the same answer, sent whole with its length, at no
    API call; a file put there shows at the next listing."""
    first = propfind(dav, "/General/", COMMON, "1")
    before = api_calls(dav)
    again = propfind(dav, "/General/", COMMON, "1")
    assert again.content == first.content
    assert again.headers["Content-Length"] == str(len(first.content))
    assert api_calls(dav) == before
    assert dav.put(quote("/General/Thumbs.db"), content=b"thumbs").status_code in (201, 204)
    after = answers(propfind(dav, "/General/", COMMON, "1").content)
    assert after["/General/Thumbs.db"][("200 OK", "{DAV:}getcontentlength")] == "6"
    # A lock shows at once in the next listing's lockdiscovery too.
    r = dav.request("LOCK", quote("/General/Thumbs.db"), content=lock_body())
    assert r.status_code == 200, r.text
    try:
        locked = answers(propfind(dav, "/General/", ["lockdiscovery"], "1").content)
        assert "activelock" in locked["/General/Thumbs.db"][("200 OK", "{DAV:}lockdiscovery")]
    finally:
        dav.request(
            "UNLOCK", quote("/General/Thumbs.db"), headers={"Lock-Token": r.headers["Lock-Token"]}
        )


#: the documents of the folder the size is measured on
MANY = 1000


@pytest.fixture(scope="module")
def many(module_vault: VaultProcess, module_api: httpx.Client) -> str:
    """A classification folder of ``MANY`` documents (made by the bulk create, 500 a
    batch)."""
    for first in range(0, MANY, 500):
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["name__v", "type__v", "subtype__v", "lifecycle__v"])
        writer.writerows(
            [f"Listed {n:05d}", "promotional_piece__c", "advertisement__c", "general_lifecycle__c"]
            for n in range(first, min(MANY, first + 500))
        )
        r = module_api.post(
            "/objects/documents/batch",
            content=out.getvalue().encode(),
            headers={"Content-Type": "text/csv"},
        )
        assert r.json()["responseStatus"] == "SUCCESS", r.text
    return "/Promotional Piece/Advertisement/"


def test_the_answers_size_against_explorers_limit(
    many: str, module_vault: VaultProcess, tmp_path: Path
) -> None:
    """What a member costs in the answer, all properties asked or the common ones:
    Explorer reads an answer up to ``FileAttributesLimitInBytes`` (1,000,000 bytes by
    default); docs/user-guide.md says how many documents that is, from these bounds."""
    with (
        WebdavProcess(module_vault.url, tmp_path) as front,
        httpx.Client(base_url=front.address, timeout=120) as client,
    ):
        sizes: dict[str, Any] = {}
        for name, props in (("allprop", None), ("common", COMMON)):
            r = propfind(client, many, props, "1")
            members = len(answers(r.content)) - 1
            assert members >= MANY
            sizes[name] = len(r.content) / members
        # ~660 and ~420 bytes for names of 12 characters (each name is in the answer
        # twice: its href and its displayname, or once).
        assert sizes["allprop"] <= 700, sizes
        assert sizes["common"] <= 450, sizes
        # So Explorer's default limit reads a folder of about 1,500 such documents.
        assert 1400 <= EXPLORER_LIMIT / sizes["allprop"] <= 2000, sizes


def test_what_is_kept_goes_at_a_change(tmp_path: Path) -> None:
    """``Listings`` alone: an answer is given again until a change; one made while a
    change came is not kept; at most ``_KEPT`` are, and what goes leaves no file."""
    listings = Listings(tmp_path)

    def made(text: bytes) -> Path:
        file = listings.new_file()
        file.write(text)
        file.close()
        return Path(file.name)

    stamp = listings.stamp
    listings.keep(("/a",), made(b"a"), 1, stamp)
    kept = listings.kept(("/a",))
    assert kept is not None and kept.path.read_bytes() == b"a"
    listings.changed()
    assert listings.kept(("/a",)) is None
    assert not kept.path.exists()
    late = made(b"late")
    listings.keep(("/b",), late, 4, stamp)  # made before the change: not kept
    assert listings.kept(("/b",)) is None and not late.exists()
    for n in range(_KEPT + 3):
        listings.keep((f"/{n}",), made(b"x"), 1, listings.stamp)
    assert listings.kept(("/0",)) is None
    assert listings.kept((f"/{_KEPT + 2}",)) is not None
    assert len(list(tmp_path.iterdir())) == _KEPT
