"""The spool's files at start: records that cannot be used are set aside, the rest is
loaded; lost+found names stay readable and within a local file name's length."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from vaultfs.bridge.write.spool import entry, lost, store

LONG = "治験実施計画書改訂版" * 9 + ".txt"  # 274 bytes


def good(doc_id: int) -> dict[str, object]:
    return {"doc_id": doc_id, "filename": "a.txt", "base_md5": None, "state": "pending"}


def test_the_states_a_record_may_have_are_the_entries() -> None:
    assert {entry.EDITING, entry.PENDING, entry.UPLOADING, entry.UNLOCKING} == store.STATES


@pytest.mark.parametrize(
    "record",
    [
        b"{truncated",
        b"\xff\xfe",
        b"[]",
        b'"a string"',
        json.dumps({**good(5), "doc_id": "5"}).encode(),
        json.dumps({**good(5), "doc_id": True}).encode(),
        json.dumps({**good(5), "state": "flying"}).encode(),
        json.dumps({**good(5), "attempts": "many"}).encode(),
        json.dumps({k: v for k, v in good(5).items() if k != "base_md5"}).encode(),
        json.dumps(good(6)).encode(),  # names another document than its file
    ],
)
def test_a_record_that_cannot_be_used_is_set_aside_and_the_rest_loaded(
    tmp_path: Path, record: bytes
) -> None:
    (tmp_path / "5.json").write_bytes(record)
    (tmp_path / "5.data").write_bytes(b"what a user wrote\n")
    (tmp_path / "9.json").write_text(json.dumps(good(9)))
    (tmp_path / "9.data").write_bytes(b"good\n")
    [loaded] = lost.usable_entries(tmp_path)
    assert loaded.doc_id == 9 and (tmp_path / "9.data").exists()
    [(path, why)] = [(p, p.with_name(p.name + ".json")) for p in lost.list_lost(tmp_path)]
    assert path.read_bytes() == b"what a user wrote\n" and path.name.startswith("5-")
    assert json.loads(why.read_text())["error_type"] == "UNREADABLE_RECORD"
    [kept] = (tmp_path / lost.QUARANTINE).iterdir()
    assert kept.read_bytes() == record and not (tmp_path / "5.json").exists()
    assert lost.usable_entries(tmp_path)[0].doc_id == 9  # a second start: nothing new


def test_scratch_files_with_unreadable_labels_are_kept(tmp_path: Path) -> None:
    scratch = tmp_path / store.SCRATCH
    scratch.mkdir()
    labels = {
        "1": b"\xff",
        "2": json.dumps({"name": os.fsdecode(b"bad-\xff.txt"), "new_document": True}).encode(),
        "3": b"[]",
        "4": json.dumps({"name": "x.swp", "new_document": False}).encode(),  # temporary
    }
    for number, label in labels.items():
        (scratch / number).write_bytes(number.encode())
        os.setxattr(scratch / number, store.SCRATCH_XATTR, label)
    rescued = lost.rescue_scratch(tmp_path, set())
    assert sorted(p.read_bytes() for p in rescued) == [b"1", b"2", b"3"]
    assert "new-bad-\N{REPLACEMENT CHARACTER}.txt" in [p.name for p in rescued]
    records = lost.lost_records(tmp_path)
    assert all(isinstance(r["filename"], str) for r in records)
    json.dumps(records, ensure_ascii=False).encode()  # the status can say them


def test_lost_names_of_long_vault_names_fit_and_stay_apart(tmp_path: Path) -> None:
    paths = []
    given = [LONG, LONG, LONG.replace("版", "案")]  # the third differs only past the cut
    for n, name in enumerate(given):
        source = tmp_path / f"{n}.data"
        source.write_bytes(str(n).encode())
        paths.append(lost.keep_in_lost(tmp_path, source, "12", name, {"filename": name}))
    names = [p.name for p in paths]
    assert len(set(names)) == 3 and "(2)" in names[1] and "(2)" not in names[2]
    for path, name in zip(paths, given, strict=True):
        assert len(os.fsencode(path.name + ".json.tmp")) <= 255
        assert path.name.startswith("12-治験") and path.name.endswith(".txt")
        assert json.loads(path.with_name(path.name + ".json").read_text())["filename"] == name
