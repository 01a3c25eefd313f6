"""What the tree shows around saves: immutable versions look immutable, sizes are never
empty for content, and a second ``rsync -a`` after an edit copies only what changed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .conftest import Documents, run

pytestmark = pytest.mark.mount


def test_rsync_twice_after_an_edit_copies_only_the_new_version(
    documents: Documents, tmp_path: Path
) -> None:
    path = documents.make("mirror.txt", b"first\n")
    doc = path.parent
    out = tmp_path / "out"
    run("rsync", "-a", f"{doc}/", out)
    old_version = next(p for p in (doc / "versions").iterdir())
    stamp = os.stat(old_version / path.name).st_mtime_ns
    run("sh", "-c", 'echo second >> "$1"', "sh", path)
    copied = run("rsync", "-a", "--out-format=%n", f"{doc}/", out).stdout.split()
    assert os.stat(old_version / path.name).st_mtime_ns == stamp
    assert not [c for c in copied if c.startswith(f"versions/{old_version.name}/")], copied
    assert path.name in copied
    assert (out / path.name).read_bytes() == b"first\nsecond\n"
    assert (out / "versions" / old_version.name / path.name).read_bytes() == b"first\n"


def test_files_with_content_are_never_listed_empty(documents: Documents) -> None:
    demo = documents.mount.mountpoint / "General" / "Employee Handbook"
    renditions = list(demo.glob("**/renditions/*"))
    assert renditions, "the demo document has renditions"
    for rendition in renditions:
        listed = os.stat(rendition).st_size
        assert listed > 0
        with open(rendition, "rb") as f:  # the exact size once opened
            data = f.read()
            assert os.fstat(f.fileno()).st_size == len(data) > 0
    empty = documents.make("empty.txt", b"")
    assert os.stat(empty).st_size == 0  # its checksum says it is empty


def test_renaming_the_source_file_to_a_visible_name_is_refused(documents: Documents) -> None:
    path = documents.make("report.txt", b"report\n")
    result = run("mv", path, path.with_name("other.txt"), check=False)
    assert result.returncode != 0 and "Operation not permitted" in result.stderr
    assert sorted(p.name for p in path.parent.iterdir()) == sorted(
        ["report.txt", "attachments", "relationships", "renditions", "versions"]
    )
    assert path.read_bytes() == b"report\n"
