"""A search in GNOME Files from the top of a mount of 20,000 documents: its walk into
every document's folder spends no more than the walks' share of the vault's budget
(docs/user-guide.md, "The vault's budget"), the search finishes and finds the
document by name, and the status names GNOME Files as the walker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.bridge.test_index_mount import bulk_create
from tests.conftest import API, login
from tests.desktop.conftest import MARKS
from tests.desktop.test_files_search import calls
from vaultfs.testing.mount_process import MountProcess, can_mount
from vaultfs.testing.vault_process import VaultProcess

pytestmark = MARKS

#: documents made in bulk: without the share, the search would cost a call each. The
#: walk crawls every document's folder and sub-folders (about 100,000 directories
#: here). An earlier build was still searching after 600 s under load; with the
#: listing's attributes (``plus_names``) and the times read from the folder index, 39 s
#: in all on a quiet machine, the bulk create included. The speed of big walks is the
#: bench's (``./run bench --only walk``, the scale workload's find and GNOME Files rows)
COUNT = 20_000
#: the document searched for, the last made
LAST = f"walked {COUNT - 1}"
#: the share the mount is given: calls per 5 minutes a program, calls a day
BURST, DAY = 40, 60


@pytest.fixture
def big_mount(fresh_vault: VaultProcess, tmp_path: Path) -> Iterator[MountProcess]:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    headers = {"Authorization": login(fresh_vault.url)}
    with httpx.Client(base_url=fresh_vault.url + API, headers=headers, timeout=120) as api:
        bulk_create(api, COUNT, "walked")
    # At the log level users run: a debug line per refused listing (tens of thousands
    # in this walk) made the daemon's walk a third slower.
    process = MountProcess(
        fresh_vault.url,
        tmp_path / "mount",
        options=f"walk_burst={BURST},walk_calls={DAY}",
        log_level="INFO",
    )
    try:
        yield process.start()
    finally:
        process.stop()


def test_a_search_of_the_whole_big_mount_spends_the_share_and_finds_by_name(
    big_mount: MountProcess, desktop: Any
) -> None:
    before = big_mount.status()
    files = desktop(big_mount.mountpoint)
    assert "General" in files.wait_for(lambda v: bool(v.rows), timeout=60).names
    files.type_keys("ctrl+f", text=LAST)
    shown = files.wait_for(
        lambda v: v.title == f"Search for “{LAST}”" and not v.searching and v.found,
        timeout=600,
    )
    print("the search shows:", shown.rows)
    # The document's folder, and its links in the views the share let the walk list.
    assert {row[0] for row in shown.rows} == {LAST}
    places = [row[1] for row in shown.rows]
    assert "General/" in places and len(places) == len(set(places))
    assert set(places) <= {"General/", "My Documents/", "Recent Documents/"}
    after = big_mount.status()
    walks = after["walks"]
    print("the search's walk:", walks)
    assert walks["spent"] <= DAY
    assert walks["programs"][0]["program"] == "nautilus"
    # What the walk needed past its share was refused; besides the share (a document's
    # details, the views' pages) and the mount's own polls, a few metadata calls.
    assert walks["refused"] > 0 and walks["stopped"]["program"] == "nautilus"
    spent = calls(after) - calls(before)
    assert spent <= DAY + 5, after["api_calls_by_endpoint"]
