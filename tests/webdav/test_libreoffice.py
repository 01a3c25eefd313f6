"""LibreOffice's own WebDAV client (``vnd.sun.star.webdav://``) against the front: a .docx
opened for editing is checked out in the vault while it is open and checked in when
it closes, each of its saves is one version holding exactly the bytes LibreOffice
sent, and a document another user holds opens read-only, never written, its holder
where LibreOffice looks for one (the lock's owner).

LibreOffice (7.4, headless, driven through UNO by ``apps/office_uno.py``) talks to
the front through a relay that records what it sent (``recording``): the test sees
LibreOffice's own requests (one LOCK, a PUT under its token at each save, UNLOCK at
close) and the bytes of each PUT, without trusting the front to report them.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tests.conftest import API, EDITOR, login
from tests.programs import Office
from tests.webdav.recording import RecordingRelay
from tests.webdav.test_webdav_front import (
    ID,
    api_calls,
    latest_bytes,
    lock_owners,
    propfind,
    record,
    source_path,
)
from vaultfs.server.samples import docx_bytes
from vaultfs.testing.vault_process import VaultProcess, wait_until
from vaultfs.testing.webdav_process import WebdavProcess

MODIFIED = "{urn:vaultfs:fields}user.vault.version_modified_date__v"
#: the calls of the index's look at the vault's changes
#: The API calls of a whole editing session, open to close, with two saves, but for the
#: polls (measured 8 with LibreOffice 7.4 before the lease: its GET of the content, the
#: check-out, each save's record and upload, a read of the new content, the end of the
#: check-out; its 30-odd PROPFINDs cost none; the lease adds the look at the lock and the
#: document's read at the check-out, and each save's fence: 13 measured)
MAX_CALLS_A_SESSION = 15


@pytest.fixture(scope="module")
def front(
    module_vault: VaultProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WebdavProcess]:
    """The front, looking for the vault's changes every second: what the vault says of
    a document while LibreOffice holds it open (its check-out moved the record's
    modification time) reaches the front before LibreOffice saves, as it does in a
    session of minutes at the default interval."""
    process = WebdavProcess(
        module_vault.url, tmp_path_factory.mktemp("webdav-lo"), args=["--poll-interval", "1"]
    )
    try:
        yield process.start()
    finally:
        process.stop()


@pytest.fixture
def relay(front: WebdavProcess) -> Iterator[RecordingRelay]:
    with RecordingRelay(front.port) as relay:
        yield relay


def all_documents(api: httpx.Client) -> set[int]:
    return {d["document"]["id"] for d in api.get("/objects/documents").json()["documents"]}


def new_docx(dav: httpx.Client, api: httpx.Client, name: str, lines: list[str]) -> int:
    """A new .docx document, made through the API (by another client: nothing of this
    front's own is known of it); its id once the front shows it."""
    r = api.post(
        "/objects/documents",
        data={"type__v": "General", "lifecycle__v": "General Lifecycle", "name__v": name},
        files={"file": (f"{name}.docx", docx_bytes(lines))},
    )
    body = r.json()
    assert body["responseStatus"] == "SUCCESS", body
    doc_id = int(body["id"])
    wait_until(
        lambda: propfind(dav, "/General/", [ID]).get(f"/General/{name}/", {}).get(ID),
        timeout=30,
        what="the front to show the new document",
    )
    return doc_id


def props(dav: httpx.Client, path: str, name: str) -> str | None:
    """The property ``name`` of the file at ``path``, through the front."""
    value: str | None = propfind(dav, path, [name], depth="0")[path].get(name)
    return value


def versions(api: httpx.Client, doc_id: int) -> list[str]:
    return [v["number"] for v in record(api, doc_id)["versions"]]


def locked(api: httpx.Client, doc_id: int) -> bool:
    return bool(record(api, doc_id)["document"]["locked__v"])


class Session:
    """One document open in LibreOffice (``office_uno.py session``), a command a line."""

    def __init__(self, office: Office, url: str) -> None:
        self.proc = subprocess.Popen(
            office.argv("session", url),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def answer(self) -> dict[str, object]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"LibreOffice's driver ended ({self.proc.wait(timeout=30)})"
        answer: dict[str, object] = json.loads(line)
        return answer

    def tell(self, command: str) -> dict[str, object]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.answer()

    def end(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)


def test_libreoffice_edits_a_docx_through_the_front(
    office: Office,
    front: WebdavProcess,
    dav: httpx.Client,
    module_api: httpx.Client,
    relay: RecordingRelay,
    tmp_path: Path,
) -> None:
    api = module_api
    doc_id = new_docx(dav, api, "Edited in LibreOffice", ["Written before LibreOffice"])
    path = source_path(dav, doc_id)
    original, first = latest_bytes(api, doc_id), versions(api, doc_id)
    documents = all_documents(api)
    url = f"vnd.sun.star.webdav://127.0.0.1:{relay.port}{quote(path)}"
    opened_at = props(dav, path, "{DAV:}getlastmodified")
    before = api_calls(dav)

    session = Session(office, url)
    try:
        assert session.answer() == {"readonly": False}
        # Open for editing: checked out in the vault, and a WebDAV lock says so.
        assert locked(api, doc_id)
        assert "LibreOffice" in lock_owners(dav, path)
        # The check-out moved the vault's modification time of the document; once the
        # front has seen that, the file still shows the time it had when LibreOffice
        # opened it (LibreOffice would take another for someone else's change, and
        # refuse to save without asking).
        vault_stamp = record(api, doc_id)["document"]["version_modified_date__v"]
        wait_until(
            lambda: props(dav, path, MODIFIED) == vault_stamp,
            timeout=30,
            what="the front to see the check-out's record",
        )
        assert props(dav, path, "{DAV:}getlastmodified") == opened_at
        for n, text in enumerate(["First save. ", "Second save. "], start=1):
            assert session.tell(f"save {text}") == {"saved": True}
            # Each save is one version, in the vault before LibreOffice is told; the
            # document stays checked out between saves.
            assert versions(api, doc_id)[: len(first)] == first
            assert len(versions(api, doc_id)) == len(first) + n
            assert locked(api, doc_id)
            puts = [r for r in relay.requests() if r.method == "PUT"]
            assert len(puts) == n
            assert latest_bytes(api, doc_id) == puts[-1].body
        assert session.tell("close") == {"closed": True}
        assert session.proc.wait(timeout=60) == 0
    finally:
        session.end()
    # Closed: UNLOCK, checked in, no version more.
    wait_until(lambda: not locked(api, doc_id), timeout=15, what="the check-out to end")
    assert len(versions(api, doc_id)) == len(first) + 2
    calls = api_calls(dav) - before

    # What LibreOffice asked: one LOCK, a PUT under its token at each save, one UNLOCK
    # of the same token; never a lock file beside the document.
    sent = relay.requests()
    methods = [r.method for r in sent]
    assert methods.count("LOCK") == 1 and methods.count("UNLOCK") == 1, methods
    token = next(r for r in sent if r.method == "UNLOCK").headers["lock-token"]
    assert all(r.headers.get("if") == f"({token})" for r in sent if r.method == "PUT")
    assert not any(".~lock." in r.path for r in sent)

    # The vault's newest version is LibreOffice's last save, byte for byte; the one
    # before it is intact, and no other document was made.
    assert latest_bytes(api, doc_id) == [r for r in sent if r.method == "PUT"][-1].body
    major, minor = first[-1].split(".")
    assert api.get(f"/objects/documents/{doc_id}/versions/{major}/{minor}/file").content == (
        original
    )
    assert all_documents(api) == documents
    saved = tmp_path / "saved.docx"
    saved.write_bytes(latest_bytes(api, doc_id))
    text = json.loads(office("text", saved).stdout)["text"]
    assert text.startswith("Second save. First save. Written before LibreOffice"), text

    assert calls <= MAX_CALLS_A_SESSION, calls


def test_libreoffice_opens_a_document_another_user_holds_read_only(
    office: Office,
    dav: httpx.Client,
    module_api: httpx.Client,
    module_vault: VaultProcess,
    relay: RecordingRelay,
) -> None:
    api = module_api
    doc_id = new_docx(dav, api, "Held by the editor", ["Checked out elsewhere"])
    path = source_path(dav, doc_id)
    first = versions(api, doc_id)
    editor = {"Authorization": login(module_vault.url, EDITOR)}
    lock_url = f"{module_vault.url}{API}/objects/documents/{doc_id}/lock"
    assert httpx.post(lock_url, headers=editor).json()["responseStatus"] == "SUCCESS"
    try:
        url = f"vnd.sun.star.webdav://127.0.0.1:{relay.port}{quote(path)}"
        session = Session(office, url)
        try:
            # LOCK is refused (423): LibreOffice opens the document read-only.
            assert session.answer() == {"readonly": True}
            assert session.tell("close") == {"closed": True}
        finally:
            session.end()
        sent = relay.requests()
        assert [r.method for r in sent].count("LOCK") == 1
        assert not any(r.method == "PUT" for r in sent)
        assert versions(api, doc_id) == first
        # After the 423 LibreOffice asks the lock's owner, to name who edits it (in a
        # dialog, when it has a screen): the holder is what it finds.
        assert any(r.method == "PROPFIND" and b"lockdiscovery" in r.body for r in sent)
        assert EDITOR in lock_owners(dav, path)
    finally:
        httpx.delete(lock_url, headers=editor)
