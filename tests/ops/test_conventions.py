"""Two habits that keep coming back, kept out by reading the source (``ast``):

- a node key asked by its position (``key[0]``, ``key[1:]``) outside its own module
  (``bridge.tree.keys``) and the families (``bridge.nodes``): elsewhere code asks the
  typed key what it names (``kind``, ``doc_id``, ``labels``, ...);
- a state of a save, an upload, a create or a check-out compared as a string literal
  (``== "editing"``): the states are ``Enum`` members (``write.spool.states``,
  ``write.lease``), and what reads them compares with the member.
"""

from __future__ import annotations

import ast
from pathlib import Path

import vaultfs
from vaultfs.bridge.write.lease import LeaseState
from vaultfs.bridge.write.spool.states import CreateState, EntryState, UploadState

BRIDGE = Path(vaultfs.__file__).parent / "bridge"
#: where a key's positions are its own business
KEYS_OWN = ("tree/keys.py", "nodes/")

STATES = {s.value for s in (*EntryState, *UploadState, *CreateState, *LeaseState)}


def _modules() -> list[tuple[str, ast.AST]]:
    return [
        (str(p.relative_to(BRIDGE)), ast.parse(p.read_text(), str(p)))
        for p in sorted(BRIDGE.rglob("*.py"))
    ]


def test_no_node_key_is_asked_by_its_position_outside_the_keys_and_families() -> None:
    found = []
    for name, tree in _modules():
        if name.startswith(KEYS_OWN):
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("key", "parent", "child", "node")
                and isinstance(node.slice, ast.Constant | ast.Slice)
            ):
                found.append(f"{name}:{node.lineno}")
    assert found == []


def test_no_state_is_compared_as_a_string() -> None:
    found = []
    for name, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                for side in (node.left, *node.comparators):
                    if isinstance(side, ast.Constant) and side.value in STATES:
                        found.append(f"{name}:{node.lineno} {side.value!r}")
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and node.value.value in STATES
                and name.startswith("commands/")
            ):
                found.append(f"{name}:{node.lineno} {node.value.value!r}")
    assert found == []
