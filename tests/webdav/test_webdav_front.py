"""The WebDAV front against a real ``vaultfs serve``, driven over HTTP as a WebDAV
client speaks: a PUT is one version with the exact bytes, LOCK is the vault's check-out,
a folder listed again costs no API call, desktop junk never becomes a document, and
no path leaves the tree."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import httpx
import pytest

from tests.conftest import EDITOR, login
from vaultfs.bridge.fs.filesystem import READDIR_BATCH
from vaultfs.testing.mount_process import calls_but_polls
from vaultfs.testing.vault_process import DEMO_PASSWORD, VaultProcess, wait_until
from vaultfs.testing.webdav_process import WebdavProcess

API = "/api/v25.1"
FIELDS = "urn:vaultfs:fields"
ID = f"{{{FIELDS}}}user.vault.id"
FILENAME = f"{{{FIELDS}}}user.vault.filename__v"


@pytest.fixture
def api(module_api: httpx.Client) -> httpx.Client:
    return module_api


# --- helpers ------------------------------------------------------------------------


def propfind(dav: httpx.Client, path: str, props: list[str], depth: str = "1") -> dict[str, Any]:
    """href (unquoted) -> {property: text} of a PROPFIND asking for ``props``."""
    asked = "".join(f'<x:{p.split("}")[1]} xmlns:x="{p[1:].split("}")[0]}"/>' for p in props)
    body = f'<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop>{asked}</D:prop></D:propfind>'
    r = dav.request("PROPFIND", quote(path), headers={"Depth": depth}, content=body)
    assert r.status_code == 207, r.text
    found: dict[str, Any] = {}
    for response in ET.fromstring(r.content).iter("{DAV:}response"):
        href = unquote(response.findtext("{DAV:}href") or "")
        values = {}
        for propstat in response.iter("{DAV:}propstat"):
            if "200" in (propstat.findtext("{DAV:}status") or ""):
                for prop in propstat.find("{DAV:}prop") or []:
                    values[prop.tag] = prop.text
        found[href] = values
    return found


def source_path(dav: httpx.Client, doc_id: int) -> str:
    """The WebDAV path of document ``doc_id``'s latest source file (a walk of the type
    folders, asking each entry's id)."""
    todo = ["/"]
    while todo:
        folder = todo.pop()
        for href, props in propfind(dav, folder, [ID, FILENAME, "{DAV:}resourcetype"]).items():
            if href == folder or not href.endswith("/"):
                continue
            if props.get(ID) == str(doc_id):
                return href + str(props[FILENAME])
            if ID not in props and not href.startswith(("/.", "/Favorites", "/My ", "/Recent")):
                todo.append(href)
    raise AssertionError(f"document {doc_id} not in the tree")


def record(api: httpx.Client, doc_id: int) -> dict[str, Any]:
    body = api.get(f"/objects/documents/{doc_id}").json()
    assert body["responseStatus"] == "SUCCESS", body
    return body


def version_count(api: httpx.Client, doc_id: int) -> int:
    return len(record(api, doc_id)["versions"])


def latest_bytes(api: httpx.Client, doc_id: int) -> bytes:
    return api.get(f"/objects/documents/{doc_id}/file").content


def api_calls(dav: httpx.Client) -> int:
    """The front's API calls so far, from its status file (read through the front),
    but for its looks at the vault's changes, which may fall in any window counted."""
    return calls_but_polls(dav.get("/.vaultfs/status").json())


def lock_body() -> str:
    return (
        '<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/>'
        "</D:lockscope><D:locktype><D:write/></D:locktype><D:owner>test</D:owner></D:lockinfo>"
    )


def lock_owners(dav: httpx.Client, path: str) -> str:
    """The owners of the WebDAV locks on ``path`` (its ``lockdiscovery``), as text."""
    body = (
        '<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:lockdiscovery/>'
        "</D:prop></D:propfind>"
    )
    r = dav.request("PROPFIND", quote(path), headers={"Depth": "0"}, content=body)
    assert r.status_code == 207, r.text
    owners = ET.fromstring(r.content).iter("{DAV:}owner")
    return " ".join("".join(owner.itertext()) for owner in owners)


# --- the tests ------------------------------------------------------------------------


def test_options_announce_webdav_to_windows(dav: httpx.Client) -> None:
    r = dav.request("OPTIONS", "/")
    assert r.status_code == 200
    assert r.headers["MS-Author-Via"] == "DAV"
    assert "2" in r.headers["DAV"]  # class 2: locks


def test_propfind_of_infinite_depth_is_refused(dav: httpx.Client) -> None:
    for headers in ({"Depth": "infinity"}, {}):
        r = dav.request("PROPFIND", "/", headers=headers)
        assert r.status_code == 403
        assert b"propfind-finite-depth" in r.content


def test_a_folder_listed_again_costs_no_api_call(dav: httpx.Client) -> None:
    first = propfind(dav, "/General/", ["{DAV:}getlastmodified", ID])
    assert len(first) > 3
    before = api_calls(dav)
    again = propfind(dav, "/General/", ["{DAV:}getlastmodified", ID])
    assert again == first
    assert api_calls(dav) == before


def test_a_put_over_a_source_file_is_one_version_with_the_exact_bytes(
    dav: httpx.Client, api: httpx.Client
) -> None:
    path = source_path(dav, 3)
    versions = version_count(api, 3)
    content = os.urandom(300_000) + b"saved over WebDAV"
    r = dav.put(quote(path), content=content)
    assert r.status_code in (200, 204), r.text
    # The answer comes after the check-in: the vault has it at once.
    assert version_count(api, 3) == versions + 1
    assert hashlib.md5(latest_bytes(api, 3)).digest() == hashlib.md5(content).digest()
    assert record(api, 3)["document"]["locked__v"] is False
    assert dav.get(quote(path)).content == content


def test_lock_is_the_vaults_check_out(dav: httpx.Client, api: httpx.Client) -> None:
    path = quote(source_path(dav, 5))
    versions = version_count(api, 5)
    r = dav.request("LOCK", path, headers={"Timeout": "Second-600"}, content=lock_body())
    assert r.status_code == 200, r.text
    token = r.headers["Lock-Token"]
    try:
        assert record(api, 5)["document"]["locked__v"] is True
        # A PUT without the token is refused by WebDAV; with it, one version each.
        assert dav.put(path, content=b"no token").status_code == 423
        for n in range(2):
            content = f"save {n} under the lock".encode()
            r = dav.put(path, content=content, headers={"If": f"({token})"})
            assert r.status_code in (200, 204), r.text
            assert version_count(api, 5) == versions + n + 1
            assert latest_bytes(api, 5) == content
            assert record(api, 5)["document"]["locked__v"] is True  # still checked out
    finally:
        r = dav.request("UNLOCK", path, headers={"Lock-Token": token})
    assert r.status_code == 204
    assert record(api, 5)["document"]["locked__v"] is False


def test_a_document_another_user_holds_is_locked(
    dav: httpx.Client, api: httpx.Client, module_vault: VaultProcess
) -> None:
    path = quote(source_path(dav, 9))
    editor = {"Authorization": login(module_vault.url, EDITOR)}
    r = httpx.post(f"{module_vault.url}{API}/objects/documents/9/lock", headers=editor)
    assert r.json()["responseStatus"] == "SUCCESS", r.text
    try:
        editor_id = record(api, 9)["document"].get("locked_by__v")
        r = dav.request("LOCK", path, content=lock_body())
        assert r.status_code == 423, r.text
        holder = r.headers.get("X-Vaultfs-Locked-By")
        assert holder
        if editor_id is not None:
            assert holder == str(editor_id)
        versions = version_count(api, 9)
        assert dav.put(path, content=b"never written").status_code == 423
        assert version_count(api, 9) == versions
    finally:
        httpx.delete(f"{module_vault.url}{API}/objects/documents/9/lock", headers=editor)


def test_desktop_junk_never_becomes_a_document(dav: httpx.Client, api: httpx.Client) -> None:
    documents = len(api.get("/objects/documents").json()["documents"])
    for name in (
        "._Report.docx",
        ".DS_Store",
        "desktop.ini",
        "Thumbs.db",
        "~$Report.docx",
        "~WRL0001.tmp",
    ):
        r = dav.put(quote(f"/General/{name}"), content=b"junk")
        assert r.status_code in (201, 204), (name, r.text)
        assert dav.get(quote(f"/General/{name}")).content == b"junk"
    assert len(api.get("/objects/documents").json()["documents"]) == documents


def test_proppatch_of_a_field_sets_it(dav: httpx.Client, api: httpx.Client) -> None:
    path = quote(source_path(dav, 13))
    body = (
        '<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:f="urn:vaultfs:fields">'
        "<D:set><D:prop><f:user.vault.title__v>Set over WebDAV</f:user.vault.title__v>"
        "</D:prop></D:set></D:propertyupdate>"
    )
    r = dav.request("PROPPATCH", path, content=body)
    assert r.status_code == 207 and "200" in r.text, r.text
    assert record(api, 13)["document"]["title__v"] == "Set over WebDAV"
    title = f"{{{FIELDS}}}user.vault.title__v"
    assert propfind(dav, unquote(path), [title], depth="0")[unquote(path)][title] == (
        "Set over WebDAV"
    )


def test_no_path_leaves_the_tree(dav: httpx.Client, front: WebdavProcess) -> None:
    secret = front.cache_dir / "lock"  # a file of the front's, beside the tree
    assert secret.exists()
    for path in (
        "/General/../../../../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/General%2F..%2F..%2Fetc%2Fpasswd",
        "/..%5c..%5cetc%5cpasswd",
    ):
        r = dav.get(path)
        assert r.status_code in (400, 403, 404), (path, r.status_code)
        assert b"root:" not in r.content


def test_a_listen_beyond_loopback_is_refused(module_vault: VaultProcess) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "vaultfs",
            "webdav",
            module_vault.url,
            "--user",
            "x",
            "--listen",
            "0.0.0.0:8818",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, VAULTFS_PASSWORD=DEMO_PASSWORD),
    )
    assert result.returncode == 2
    assert "TLS" in result.stderr


def test_the_front_never_loads_pyfuse3(front: WebdavProcess) -> None:
    maps = Path(f"/proc/{front.proc.pid}/maps").read_text() if front.proc else ""
    assert "pyfuse3" not in maps


def test_a_put_of_a_new_file_in_a_folder_makes_one_document(
    dav: httpx.Client, api: httpx.Client
) -> None:
    before = {d["document"]["id"] for d in api.get("/objects/documents").json()["documents"]}
    content = os.urandom(50_000)
    r = dav.put(quote("/General/Put over WebDAV.bin"), content=content)
    assert r.status_code == 201, r.text
    listed = api.get("/objects/documents").json()["documents"]
    made = [d["document"]["id"] for d in listed if d["document"]["id"] not in before]
    assert len(made) == 1
    doc_id = made[0]
    assert version_count(api, doc_id) == 1
    assert latest_bytes(api, doc_id) == content
    assert dav.get(quote(source_path(dav, doc_id))).content == content


def test_a_lock_on_a_name_not_made_yet_makes_it(dav: httpx.Client) -> None:
    path = quote("/General/~$Locked before written.docx")  # Office's owner file
    r = dav.request("LOCK", path, content=lock_body())
    assert r.status_code == 201, r.text
    token = r.headers["Lock-Token"]
    assert dav.request("UNLOCK", path, headers={"Lock-Token": token}).status_code == 204
    assert dav.get(path).content == b""


def test_links_are_shown_as_what_they_lead_to(dav: httpx.Client) -> None:
    """WebDAV has no links: a view's entries (links to document folders) are folders."""
    listed = propfind(dav, "/Recent Documents/", ["{DAV:}resourcetype", ID])
    documents = {href: props for href, props in listed.items() if href != "/Recent Documents/"}
    assert documents
    for href, props in documents.items():
        assert href.endswith("/")  # a collection
        assert props.get(ID)  # the document's fields, through the link
    href, props = next(iter(documents.items()))
    through_link = propfind(dav, href, [FILENAME], depth="0")[href][FILENAME]
    assert dav.get(quote(href + through_link)).status_code == 200


def test_a_stopped_front_leaves_no_document_checked_out(
    module_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    with WebdavProcess(module_vault.url, tmp_path) as other:
        with httpx.Client(base_url=other.address, timeout=60) as client:
            path = quote(source_path(client, 6))
            r = client.request("LOCK", path, content=lock_body())
            assert r.status_code == 200, r.text
        assert record(api, 6)["document"]["locked__v"] is True
    assert record(api, 6)["document"]["locked__v"] is False  # SIGTERM: checked in


def test_a_lock_held_by_a_killed_front_is_released_at_its_next_start(
    module_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    process = WebdavProcess(module_vault.url, tmp_path)
    try:
        with httpx.Client(base_url=process.start().address, timeout=60) as client:
            path = quote(source_path(client, 10))
            versions = version_count(api, 10)
            r = client.request("LOCK", path, content=lock_body())
            assert r.status_code == 200, r.text
        # The check-out is the spool's, marked there as a save's is.
        mark = process.cache_dir / "spool" / "locks" / "10"
        assert mark.stat().st_mode & 0o777 == 0o600
        process.kill()  # kill -9: no stop of its own runs
        assert record(api, 10)["document"]["locked__v"] is True
        process.start()  # the same cache directory: the spool releases what it left
        wait_until(
            lambda: record(api, 10)["document"]["locked__v"] is False,
            timeout=30,
            what="the lock a killed front left to be released",
        )
        assert version_count(api, 10) == versions  # no new version
        assert not mark.exists()
        assert "doc 10 lock left by an earlier daemon; releasing it" in process.log()
    finally:
        process.stop()


def test_a_folder_longer_than_a_readdir_batch_is_listed_whole(dav: httpx.Client) -> None:
    """The core answers a listing a batch at a time (as the kernel asks for it): the
    front asks until the end."""
    names = {f"~$listed {n}.docx" for n in range(READDIR_BATCH + 20)}  # scratch files
    for name in names:
        assert dav.put(quote(f"/Clinical/{name}"), content=b"x").status_code in (201, 204)
    listed = propfind(dav, "/Clinical/", ["{DAV:}getcontentlength"])
    assert names <= {href.rsplit("/", 1)[1] for href in listed}


def test_a_check_out_is_never_shown_as_a_lock_file(
    dav: httpx.Client, api: httpx.Client, module_vault: VaultProcess
) -> None:
    """The mount shows another user's check-out as LibreOffice's lock file; the front
    does not (its clients learn of it from LOCK, answered 423), nor its own user's."""
    path = source_path(dav, 11)
    folder, name = path.rsplit("/", 1)
    folder += "/"
    lock_file = f"{folder}.~lock.{name}#"
    locked = f"{{{FIELDS}}}user.vault.locked__v"
    editor = {"Authorization": login(module_vault.url, EDITOR)}
    lock_url = f"{module_vault.url}{API}/objects/documents/11/lock"
    assert httpx.post(lock_url, headers=editor).json()["responseStatus"] == "SUCCESS"
    try:
        # The refused LOCK shows the check-out at once (no wait for a poll).
        assert dav.request("LOCK", quote(path), content=lock_body()).status_code == 423
        # Where a WebDAV client looks for the holder (LibreOffice does, after a 423):
        # the source file's lockdiscovery, an active lock without a token.
        assert EDITOR in lock_owners(dav, path)
        before = api_calls(dav)
        listed = propfind(dav, folder, [locked, "{DAV:}getcontentlength"])
        assert listed[folder][locked] == "true"
        assert lock_file not in listed
        assert api_calls(dav) == before  # from the index: no call for a holder
        assert dav.get(quote(lock_file)).status_code == 404
        # LibreOffice through a drive letter writes its lock file: refused, as the
        # mount refuses it (EBUSY), and nothing is made.
        assert dav.put(quote(lock_file), content=b"x,y;").status_code == 423
        assert lock_file not in propfind(dav, folder, [locked])
    finally:
        httpx.delete(lock_url, headers=editor)
    # Written by this user (a free document), the lock file checks it out, as on the
    # mount; removed, it ends the check-out.
    assert dav.put(quote(lock_file), content=b"x,y;").status_code == 201
    assert record(api, 11)["document"]["locked__v"] is True
    assert dav.delete(quote(lock_file)).status_code == 204
    assert record(api, 11)["document"]["locked__v"] is False
    r = dav.request("LOCK", quote(path), headers={"Timeout": "Second-600"}, content=lock_body())
    assert r.status_code == 200, r.text
    try:
        listed = propfind(dav, folder, [locked])
        assert listed[folder][locked] == "true"  # checked out, by this user
        assert lock_file not in listed
        assert lock_owners(dav, path) == "test"  # its own lock only
    finally:
        dav.request("UNLOCK", quote(path), headers={"Lock-Token": r.headers["Lock-Token"]})


def test_a_lock_whose_client_went_away_ends_with_its_timeout(
    dav: httpx.Client, api: httpx.Client
) -> None:
    """An editor that crashed never sends UNLOCK: the check-out ends when the lock's
    timeout is over, whether or not a request touches the document again."""
    path = quote(source_path(dav, 12))
    versions = version_count(api, 12)
    r = dav.request("LOCK", path, headers={"Timeout": "Second-2"}, content=lock_body())
    assert r.status_code == 200, r.text
    assert record(api, 12)["document"]["locked__v"] is True
    wait_until(
        lambda: record(api, 12)["document"]["locked__v"] is False,
        timeout=30,
        what="the expired lock's check-out to end",
    )
    # The lock is gone with it: a save under its token is refused, nothing written.
    token = r.headers["Lock-Token"]
    assert dav.put(path, content=b"late", headers={"If": f"({token})"}).status_code == 412
    assert version_count(api, 12) == versions


def test_propfind_of_property_names_names_them(dav: httpx.Client) -> None:
    """RFC 4918's ``<propname/>`` (LibreOffice asks it of every document it opens)."""
    path = source_path(dav, 14)
    body = '<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:propname/></D:propfind>'
    r = dav.request("PROPFIND", quote(path), headers={"Depth": "0"}, content=body)
    assert r.status_code == 207, r.text
    names = {prop.tag for prop in ET.fromstring(r.content).iter() if prop.text is None}
    assert {"{DAV:}getcontentlength", "{DAV:}lockdiscovery", FILENAME, ID} <= names
    assert not any(prop.text for prop in ET.fromstring(r.content).iter("{DAV:}getetag"))
