"""The state machines of a save: every move of the table works, every other is
refused, and nothing in the write layer changes a state but through the table."""

from __future__ import annotations

import ast
import itertools
import json
from pathlib import Path

import pytest

from vaultfs.bridge.write.spool import states, store
from vaultfs.bridge.write.spool.creates import Create, CreateRecord
from vaultfs.bridge.write.spool.states import (
    CreateState,
    EntryState,
    IllegalTransition,
    UploadState,
)
from vaultfs.bridge.write.spool.uploads import ATTACHMENT, UploadRecord

E, U, C = EntryState, UploadState, CreateState

#: The moves docs/architecture.md states; a move added to the table alone fails here.
ENTRY_MOVES = {
    (E.EDITING, E.EDITING),
    (E.EDITING, E.PENDING),
    (E.PENDING, E.EDITING),
    (E.PENDING, E.UPLOADING),
    (E.PENDING, E.UNLOCKING),
    (E.UPLOADING, E.EDITING),
    (E.UPLOADING, E.PENDING),
    (E.UPLOADING, E.UPLOADING),
    (E.UPLOADING, E.UNLOCKING),
    (E.UNLOCKING, E.EDITING),
}
UPLOAD_MOVES = {(U.PENDING, U.UPLOADING), (U.UPLOADING, U.PENDING), (U.UPLOADING, U.UPLOADING)}
CREATE_MOVES = {(C.PENDING, C.SENT), (C.SENT, C.PENDING)}

WRITE = Path(__file__).parents[2] / "src" / "vaultfs" / "bridge" / "write"


def entry_record(state: EntryState) -> store.EntryRecord:
    return store.EntryRecord(doc_id=7, filename="a.txt", base_md5=None, state=state)


def upload_record(state: UploadState) -> UploadRecord:
    return UploadRecord(1, 7, ATTACHMENT, "a.txt", state=state)


@pytest.mark.parametrize(("old", "new"), list(itertools.product(E, E)))
def test_an_entry_moves_exactly_as_the_table_says(old: EntryState, new: EntryState) -> None:
    record = entry_record(old)
    if (old, new) in ENTRY_MOVES:
        record.move(new)
        assert record.state is new
    else:
        with pytest.raises(IllegalTransition, match=f"from {old.value} .* to {new.value}"):
            record.move(new)
        assert record.state is old  # a refused move changes nothing


@pytest.mark.parametrize(("old", "new"), list(itertools.product(U, U)))
def test_an_upload_moves_exactly_as_the_table_says(old: UploadState, new: UploadState) -> None:
    record = upload_record(old)
    if (old, new) in UPLOAD_MOVES:
        record.move(new)
        assert record.state is new
    else:
        with pytest.raises(IllegalTransition):
            record.move(new)
        assert record.state is old


@pytest.mark.parametrize(("old", "new"), list(itertools.product(C, C)))
def test_a_create_moves_exactly_as_the_table_says(
    old: CreateState, new: CreateState, tmp_path: Path
) -> None:
    job = Create(CreateRecord(tmp_path, "vaultfs-x"), {}, "a.txt", 0.0, state=old)
    if (old, new) in CREATE_MOVES:
        job.move(new)
        assert job.state is new
    else:
        with pytest.raises(IllegalTransition, match=f"from {old.value} .* to {new.value}"):
            job.move(new)
        assert job.state is old


def test_the_tables_hold_the_moves_and_nothing_else() -> None:
    def moves(machine: states.Machine) -> set[tuple[object, object]]:  # type: ignore[type-arg]
        return {(old, new) for old, news in machine.table.items() for new in news}

    assert moves(states.ENTRY_MOVES) == ENTRY_MOVES
    assert moves(states.UPLOAD_MOVES) == UPLOAD_MOVES
    assert moves(states.CREATE_MOVES) == CREATE_MOVES
    assert states.ENTRY_MOVES.start is E.EDITING and states.UPLOAD_MOVES.start is U.PENDING
    assert states.CREATE_MOVES.start is C.PENDING
    assert all(state.message for state in [*E, *U, *C])


def test_the_records_on_disk_hold_the_values_earlier_versions_wrote(tmp_path: Path) -> None:
    assert [s.value for s in E] == ["editing", "pending", "uploading", "unlocking"]
    record = entry_record(E.UPLOADING)
    (tmp_path / "7.data").write_bytes(b"x")
    store.write_record(tmp_path, record)
    assert json.loads((tmp_path / "7.json").read_text())["state"] == "uploading"
    [loaded], _ = store.scan(tmp_path)
    assert loaded.state is E.UPLOADING
    with pytest.raises(ValueError, match="unknown state 'flying'"):
        store.EntryRecord.from_json(
            {"doc_id": 7, "filename": "a", "base_md5": None, "state": "flying"}
        )


def _state_assignments(path: Path) -> list[str]:
    """Where ``path`` assigns an attribute named ``state``, as ``function:line``."""
    found = []
    tree = ast.parse(path.read_text())
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AugAssign | ast.AnnAssign)
                else []
            )
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr == "state":
                    found.append(f"{path.name}:{function.name}")
    return found


def test_nothing_in_the_write_layer_sets_a_state_but_through_its_table() -> None:
    assignments = sorted(a for p in WRITE.rglob("*.py") for a in _state_assignments(p))
    # the records' own: reading the value from disk, and the one move; the lease's move
    assert assignments == [
        "creates.py:move",
        "lease.py:move",
        "store.py:__post_init__",
        "store.py:move",
        "uploads.py:__post_init__",
        "uploads.py:move",
    ]
