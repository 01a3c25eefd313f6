"""The walks' share of the vault's budget on a real mount at the default poll
interval: ``find`` over the whole mount of a vault of 20,000 documents spends no more
than the share, finishes, lists every document by name, names itself in the status
and is told once on the desktop; what a person does meanwhile goes through."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.bridge.test_index_mount import api, bulk_create
from tests.bridge.test_notifications import CHECKLIST, SessionBus, session_bus
from vaultfs.testing.mount_process import MountProcess, can_mount
from vaultfs.testing.vault_process import VaultProcess

pytestmark = pytest.mark.skipif(not can_mount(), reason="needs /dev/fuse and fusermount3")

__all__ = ["api", "session_bus"]  # the fixtures, used by name

#: documents made in bulk: a walk of them costs a call each without the share
COUNT = 20_000
#: the share the mount is given: calls per 5 minutes a program, calls a day. The day is
#: more than the walk can spend within its timeout (its burst comes back over 5 minutes:
#: 40 + 40 * 900 / 300), so that a person's own listing after it still has some: on a
#: loaded machine a slow walk spent the whole of a day of 60, and that listing was refused.
BURST, DAY = 40, 200


#: the call each poll of the index makes once
_DELETIONS = "GET /objects/deletions/documents"


def _calls(status: dict[str, Any], endpoint: str) -> int:
    return int(status["api_calls_by_endpoint"].get(endpoint, 0))


def test_find_over_the_whole_vault_spends_the_share_and_lists_every_document(
    session_bus: SessionBus, fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    bulk_create(api, COUNT, "walked")
    options = f"walk_burst={BURST},walk_calls={DAY}"
    # At the log level users run (a debug line per refused listing, 60,000 of them,
    # made the daemon's walk a third slower).
    with MountProcess(fresh_vault.url, tmp_path / "m", options=options, log_level="INFO") as mount:
        root = mount.mountpoint
        before = mount.status()
        found = subprocess.run(
            ["find", str(root)], capture_output=True, text=True, timeout=900, check=False
        )
        after = mount.status()
        # Every document by name, each once: the documents' folders cost nothing.
        pattern = re.compile(re.escape(f"{root}/General/") + r"walked \d+")
        walked = [line for line in found.stdout.splitlines() if pattern.fullmatch(line)]
        assert len(walked) == len(set(walked)) == COUNT
        # What only the walk needed past its share was refused, never listed as empty.
        assert found.returncode == 1
        assert "Disk quota exceeded" in found.stderr
        walks = after["walks"]
        assert walks["spent"] <= DAY and walks["refused"] > 0
        assert walks["stopped"]["program"] == "find"
        assert walks["programs"][0]["program"] == "find"
        # The walk's calls: the share, and what the mount spends of its own meanwhile:
        # its polls at the default interval (a page of changes and the deletions each,
        # however long the walk takes on a loaded machine) and a few metadata calls.
        spent = after["api_calls"] - before["api_calls"]
        polls = _calls(after, _DELETIONS) - _calls(before, _DELETIONS)
        assert spent <= DAY + 2 * polls + 3, after["api_calls_by_endpoint"]
        notice = session_bus.wait_for("A program is walking the whole vault")
        assert "find is walking the whole vault" in notice["body"]
        # The calls it had spent when it was first stopped (the share comes back with
        # time: the status says the last refusal's).
        told = re.search(r"stopped it at (\d+) calls", notice["body"])
        assert told is not None and 0 < int(told[1]) <= walks["stopped"]["calls"] <= DAY
        assert f"{root}/.search/" in notice["body"]

        # A person's own work goes through: a listing of another program (its own
        # burst), a read and a save of a document.
        document = (root / CHECKLIST).parent
        versions = os.listdir(document / "versions")
        assert versions
        assert (document / "versions" / versions[0] / CHECKLIST.rsplit("/", 1)[1]).read_bytes()
        with open(root / CHECKLIST, "ab") as file:
            file.write(b"a line after the walk\n")
        mount.settle()
        assert (root / CHECKLIST).read_bytes().endswith(b"a line after the walk\n")
        doc_id = int(os.getxattr(document, "user.vault.id"))
        saved = api.get(f"/objects/documents/{doc_id}/file")
        assert saved.content.endswith(b"a line after the walk\n")
        # One notification for the whole walk, and nothing else to tell.
        assert [n["summary"] for n in session_bus.received()] == [
            "A program is walking the whole vault"
        ]
