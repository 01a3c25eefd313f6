"""litmus (Debian's WebDAV server test suite) against the front, on a type folder of
the tree: every test passes but those the vault's shape refuses, each listed here and
explained in docs/user-guide.md ("litmus results")."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from vaultfs.testing.vault_process import VaultProcess
from vaultfs.testing.webdav_process import WebdavProcess

#: (suite, test) that fail, and why (the docs say the same)
EXPECTED_FAILURES = {
    # MKCOL inside a folder made by MKCOL: folders are made in type folders only
    ("basic", "delete_fragment"),
    ("basic", "mkcol"),
    ("copymove", "copy_init"),
    ("copymove", "copy_coll"),
    ("copymove", "copy_shallow"),
    ("copymove", "move"),
    ("copymove", "move_coll"),
    ("locks", "prep_collection"),
    # ... and what follows from that collection's absence (a lock-null file there)
    ("locks", "lock_collection"),
    ("locks", "owner_modify"),
    ("locks", "indirect_refresh"),
    # a source file keeps the vault's file name: MOVE of it to another name is refused
    ("props", "propmove"),
}

_RESULT = re.compile(r"^-> running `(\w+)'|^\s*\d+\. (\w+)\.+ (pass|FAIL|SKIPPED|WARNING)")


def failures(output: str) -> set[tuple[str, str]]:
    suite, failed = "", set()
    for line in output.splitlines():
        found = _RESULT.match(line)
        if found and found.group(1):
            suite = found.group(1)
        elif found and found.group(3) == "FAIL":
            failed.add((suite, found.group(2)))
    return failed


@pytest.mark.skipif(shutil.which("litmus") is None, reason="needs Debian's litmus")
def test_litmus_fails_only_where_the_vault_refuses(
    fresh_vault: VaultProcess, tmp_path: Path
) -> None:
    with WebdavProcess(fresh_vault.url, tmp_path, args=["--allow-delete"]) as front:
        result = subprocess.run(
            ["litmus", "-k", front.address + "/General/"],
            capture_output=True,
            encoding="latin-1",  # litmus prints the raw bytes of its odd names
            timeout=600,
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin", "TESTS": "basic copymove props locks"},
        )
    output = result.stdout
    assert "summary for `locks'" in output, output[-3000:]
    assert failures(output) == EXPECTED_FAILURES, output
