"""Names and records a mount cannot use, on a real mount of a real vault.

* A vault file name longer than a local file name (274 bytes): an edit through the
  mount checks in under that name (no local file is named after it).
* Names a user writes that the vault cannot take (over 255 bytes, a ``name__v`` over
  its 100 characters, bytes that are not UTF-8) are refused at open(O_CREAT) with
  ENAMETOOLONG or EINVAL: nothing listed, nothing in the vault, nothing in the status.
* Malformed records in a cache directory never stop a mount from starting: they are
  set aside (the record in ``quarantine/``, the content in lost+found) and the good
  entry beside them is uploaded.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from vaultfs.testing.mount_process import MountProcess
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = pytest.mark.mount

API = "/api/v25.1"
GENERAL = {"type__v": "General", "lifecycle__v": "General Lifecycle"}
#: 94 characters, 274 bytes: a name the vault takes and no local file system does
LONG_FILENAME = "治験実施計画書改訂版" * 9 + ".txt"


def ok(response: httpx.Response) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert body["responseStatus"] == "SUCCESS", body
    return body


def new_document(api: httpx.Client, name: str, filename: str, content: bytes) -> int:
    fields = {**GENERAL, "name__v": name}
    body = ok(api.post("/objects/documents", data=fields, files={"file": (filename, content)}))
    return int(body["id"])


def documents(api: httpx.Client) -> list[dict[str, Any]]:
    body = ok(api.get("/objects/documents", params={"limit": 1000}))
    return [item["document"] for item in body["documents"]]


def test_an_edit_of_a_document_whose_file_name_is_274_bytes_checks_in(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    assert len(LONG_FILENAME) == 94 and len(LONG_FILENAME.encode()) == 274
    doc_id = new_document(api, "Long file name", LONG_FILENAME, b"first line\n")
    assert ok(api.get(f"/objects/documents/{doc_id}"))["document"]["filename__v"] == LONG_FILENAME
    with MountProcess(fresh_vault.url, tmp_path) as mount:
        folder = mount.document_dir(doc_id)
        [shown] = [p for p in folder.iterdir() if p.is_file()]
        assert len(os.fsencode(shown.name)) <= 255  # the mount shows it cut, with a hash
        with open(shown, "ab") as f:
            f.write(b"appended through the mount\n")
        wait_until(lambda: mount.status()["pending_uploads"] == [], timeout=60, what="check-in")
        assert mount.status()["lost_and_found"] == []
    document = ok(api.get(f"/objects/documents/{doc_id}"))["document"]
    assert document["filename__v"] == LONG_FILENAME
    assert (document["major_version_number__v"], document["minor_version_number__v"]) == (0, 2)
    content = api.get(f"/objects/documents/{doc_id}/file").content
    assert content == b"first line\nappended through the mount\n"
    assert not ok(api.get(f"/objects/documents/{doc_id}/lock")).get("lock")


def test_names_the_vault_cannot_take_are_refused_at_open(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    before = {d["id"] for d in documents(api)}
    refused = [
        ("x" * 296 + ".txt").encode(),  # 300 bytes
        ("n" * 101 + ".txt").encode(),  # name__v of 101 characters
        b"invalid-utf8-\xff.txt",  # not UTF-8
    ]
    expected = [errno.ENAMETOOLONG, errno.ENAMETOOLONG, errno.EINVAL]
    with MountProcess(fresh_vault.url, tmp_path) as mount:
        general = os.fsencode(mount.mountpoint / "General")
        assert os.statvfs(general).f_namemax == 255
        for name, number in zip(refused, expected, strict=True):
            with pytest.raises(OSError) as raised:
                os.open(general + b"/" + name, os.O_WRONLY | os.O_CREAT, 0o644)
            assert raised.value.errno == number, name
        with pytest.raises(OSError) as raised:
            os.mkdir(general + b"/" + b"d" * 101)
        assert raised.value.errno == errno.ENAMETOOLONG
        # The limit is the vault's: 100 characters of name__v are taken.
        taken = ("n" * 100 + ".txt").encode()
        fd = os.open(general + b"/" + taken, os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"a name of exactly 100 characters\n")
        os.close(fd)
        listing = os.listdir(general)
        assert not set(refused) & set(listing) and b"d" * 101 not in listing
        wait_until(
            lambda: any(d["name__v"] == "n" * 100 for d in documents(api)),
            timeout=60,
            what="the 100-character document",
        )
        status = mount.settle()  # the vault has it: its answer reaches the mount next
        assert status["pending_uploads"] == [] and status["lost_and_found"] == []
        assert status["pending_new_documents"] == []
        log = mount.log_path.read_text(errors="replace")
        assert "not valid UTF-8" in log and "at most 100" in log and "255" in log
    made = [d for d in documents(api) if d["id"] not in before]
    assert [d["name__v"] for d in made] == ["n" * 100]


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def test_malformed_records_are_set_aside_and_the_good_entry_is_uploaded(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    """A cache directory as a crashed daemon of some other version might leave it:
    one good pending check-in among records that cannot be read or used, and scratch
    files with unreadable labels or names that are not UTF-8."""
    original = b"the original\n"
    doc_id = new_document(api, "Pending", "pending.txt", original)
    ok(api.post(f"/objects/documents/{doc_id}/lock"))  # the crashed daemon's check-out
    cache = tmp_path / "cache"
    spool = cache / "spool"
    (spool / "uploads").mkdir(parents=True, mode=0o700)
    (spool / "scratch").mkdir(mode=0o700)
    saved = original + b"written before the crash\n"
    (spool / f"{doc_id}.data").write_bytes(saved)
    good = {"doc_id": doc_id, "filename": "pending.txt", "base_md5": md5(original)}
    (spool / f"{doc_id}.json").write_text(json.dumps({**good, "state": "pending"}))
    bad_records = {
        "7": b"{not json",
        "8": json.dumps({"doc_id": "eight", "filename": "x.txt", "state": "pending"}).encode(),
        "9": b"[1, 2, 3]",
        "10": json.dumps({"doc_id": 10, "filename": "y.txt", "state": "flying"}).encode(),
        "11": json.dumps({"doc_id": 12, "filename": "z.txt", "state": "pending"}).encode(),
        "12": b"\xff\xfe not even text",
    }
    for stem, record in bad_records.items():
        (spool / f"{stem}.json").write_bytes(record)
        (spool / f"{stem}.data").write_bytes(f"content of {stem}\n".encode())
    (spool / "uploads" / "3.json").write_bytes(b'{"number": 3, "doc_id": 1, "target": 5}')
    (spool / "uploads" / "3.data").write_bytes(b"an attachment\n")
    labels = {
        "1": b"\xff\xfe",  # not JSON
        "2": json.dumps({"name": os.fsdecode(b"bad-\xff.txt"), "new_document": True}).encode(),
        "3": b'["a", "list"]',
    }
    for number, label in labels.items():
        path = spool / "scratch" / number
        path.write_bytes(f"scratch {number}\n".encode())
        os.setxattr(path, "user.vaultfs.scratch", label)
    with MountProcess(fresh_vault.url, tmp_path, cache_dir=cache) as mount:
        wait_until(
            lambda: api.get(f"/objects/documents/{doc_id}/file").content == saved,
            timeout=60,
            what="the good entry's draft",
        )
        wait_until(lambda: mount.status()["pending_uploads"] == [], timeout=60, what="unlock")
        lost = mount.status()["lost_and_found"]
        kept = sorted((spool / "lost+found" / item["file"]).read_bytes() for item in lost)
        assert kept == sorted(
            [f"content of {stem}\n".encode() for stem in bad_records]
            + [b"an attachment\n"]
            + [f"scratch {number}\n".encode() for number in labels]
        )
        assert all(
            item["error"].startswith(("UNREADABLE_RECORD", "DAEMON_STOPPED")) for item in lost
        )
        names = [item["file"] for item in lost]
        assert all(n.encode("utf-8") for n in names)  # readable: every name is UTF-8
        assert "new-bad-\N{REPLACEMENT CHARACTER}.txt" in names
        quarantined = sorted(p.name.split(".")[0] for p in (spool / "quarantine").iterdir())
        assert quarantined == sorted([*bad_records, "3"])
        assert "cannot be used" in mount.log_path.read_text(errors="replace")
        assert (mount.mountpoint / ".vaultfs" / "lost+found").is_dir()
    assert not ok(api.get(f"/objects/documents/{doc_id}/lock")).get("lock")
    # A second start finds nothing left to set aside.
    with MountProcess(fresh_vault.url, tmp_path / "again", cache_dir=cache) as again:
        assert len(again.status()["lost_and_found"]) == len(lost)
