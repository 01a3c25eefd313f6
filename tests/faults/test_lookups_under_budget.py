"""Lookups survive a spent call budget: a ``find`` of the mount beside 20 edits on a
vault whose burst limit is 100 calls.

Every lookup and listing that needs the vault waits for the budget then (seconds per
call); meanwhile the kernel may drop names it holds (memory pressure, an invalidation)
and forget their inodes. An inode the kernel was given must stay known whatever is
waiting: before, a forget that arrived while a listing of ``versions/`` waited freed
the number the listing then handed back, and ``find`` failed with "No such file or
directory" on ``versions/0.x`` directories that exist (daemon log: "inode N is not
known"). tests/bridge/test_inodes_held.py drives that interleaving exactly; this test
runs the whole scenario on a real mount.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import login
from vaultfs.testing.mount_process import MountProcess, can_mount
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = pytest.mark.mount

API = "/api/v25.1"
#: a short window: the budget is spent and regained within the test
BURST = ["--burst-limit", "100", "--burst-window", "20"]


@pytest.fixture
def budget_vault(tmp_path: Path) -> Iterator[VaultProcess]:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    server = VaultProcess(tmp_path / "data", extra_args=BURST)
    try:
        yield server.start()
    finally:
        server.stop()


def api_get(url: str, path: str, params: dict[str, object] | None = None) -> dict:
    """GET through the same budget as the mount: waits out API_LIMIT_EXCEEDED."""
    headers = {"Authorization": login(url)}
    deadline = time.monotonic() + 120
    while True:
        body = httpx.get(url + API + path, params=params, headers=headers, timeout=60).json()
        if body.get("responseStatus") == "SUCCESS" or time.monotonic() > deadline:
            return body
        time.sleep(1)


def version_dirs(url: str) -> set[tuple[int, str]]:
    """(document id, "M.m") of every version the vault has."""
    found = set()
    documents = api_get(url, "/objects/documents", {"limit": 1000})["documents"]
    for item in documents:
        doc_id = int(item["document"]["id"])
        for version in api_get(url, f"/objects/documents/{doc_id}/versions")["versions"]:
            found.add((doc_id, version["number"]))
    return found


def test_find_beside_edits_under_a_burst_limit_finds_every_version(
    budget_vault: VaultProcess, tmp_path: Path
) -> None:
    # A poll every 5 s: the index's calls spend the same burst budget as find's, as a
    # mount's polls would over a long walk. The walks' share of the mount is lifted:
    # what is tried here is the vault's own limit, which the finds' calls wait for
    # (tests/bridge/test_walk_share_mount.py tries the share).
    options = "poll_interval=5,walk_burst=100000,walk_calls=100000"
    with MountProcess(budget_vault.url, tmp_path, options=options) as mount:
        texts = sorted(
            p
            for p in mount.mountpoint.glob("*/**/*")
            if p.suffix in (".txt", ".md", ".csv") and not _FIXED & set(p.parts)
        )
        assert len(texts) >= 10, texts
        edits = [texts[n % 10] for n in range(20)]
        failures: list[str] = []

        def edit(paths: list[Path]) -> None:
            for path in paths:
                with open(path, "ab") as f:  # one save each: an append, then close
                    f.write(b"edited beside a find\n")

        workers = [
            threading.Thread(target=edit, args=(edits[n::10],), daemon=True) for n in range(10)
        ]
        for worker in workers:
            worker.start()
        finds = 0
        while any(w.is_alive() for w in workers) or finds < 2:
            found = subprocess.run(
                ["find", str(mount.mountpoint)], capture_output=True, text=True, timeout=600
            )
            finds += 1
            if found.returncode != 0:
                failures.append(found.stderr)
        for worker in workers:
            worker.join(timeout=600)
        assert failures == [], failures[:2]
        assert "is not known" not in mount.log_path.read_text(errors="replace")
        # Once quiet, every version the vault has is a directory the walk reaches.
        wait_until(lambda: mount.status()["pending_uploads"] == [], timeout=300, what="saves")
        expected = version_dirs(budget_vault.url)
        listed = subprocess.run(
            ["find", str(mount.mountpoint), "-path", "*/versions/*", "-prune"],
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        ).stdout.splitlines()
        assert len(listed) == len(expected) > 20


#: directories whose files are not a document's latest source file
_FIXED = {"versions", "renditions", "attachments", "relationships", ".vaultfs"}
