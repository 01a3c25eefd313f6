"""The path entry's names: what a path may hold, and where a link leads."""

from __future__ import annotations

import pytest

from vaultfs import errors
from vaultfs.bridge.fs.by_path import _joined, split


def test_split_refuses_what_could_leave_the_tree() -> None:
    assert split("/General//Travel Policy/") == ["General", "Travel Policy"]
    assert split("/") == []
    for path in ("/General/../etc", "/./General", "/a/\0b"):
        with pytest.raises(errors.InvalidName):
            split(path)


def test_a_link_leads_within_the_tree_only() -> None:
    assert _joined(["Favorites"], "../General/Travel Policy") == ["General", "Travel Policy"]
    assert _joined(["A", "B", "relationships", "t"], "../../../C") == ["A", "C"]
    for target in ("../../etc", "/etc/passwd"):
        with pytest.raises(errors.NotFound):
            _joined(["Favorites"], target)
