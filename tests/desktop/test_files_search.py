"""A search in GNOME Files, on a fresh mount of a real vault: the first one shows its
results and ends (docs/user-guide.md, "On the desktop": why it could spin for ever on a
machine without graphics acceleration, and what GNOME Files is run with here)."""

from __future__ import annotations

from typing import Any

from tests.desktop.conftest import MARKS
from vaultfs.testing.mount_process import MountProcess

pytestmark = MARKS

#: the mount's own look for the vault's changes (its poll), not the search's cost
_POLL = frozenset({"GET /objects/documents", "GET /objects/deletions/documents"})


def calls(status: dict[str, Any]) -> int:
    by_endpoint: dict[str, int] = status["api_calls_by_endpoint"]
    return sum(n for endpoint, n in by_endpoint.items() if endpoint not in _POLL)


def test_the_first_search_in_a_fresh_mount_shows_its_results(
    fresh_mount: MountProcess, desktop: Any
) -> None:
    before = calls(fresh_mount.status())
    files = desktop(fresh_mount.mountpoint)
    assert {"General", "Clinical"} <= files.wait_for(lambda v: bool(v.rows)).names
    files.type_keys("ctrl+f", text="Travel")
    # The search walks the whole mount (nothing of it read before), then shows what it
    # found and stops searching: no "Searching…" left.
    shown = files.wait_for(
        lambda v: v.title == "Search for “Travel”" and not v.searching and v.found, timeout=60
    )
    results = {row[0]: row[1] for row in shown.rows}
    print("the search shows:", shown.rows)
    # The document's folder and its file, each once: no older version of it (GNOME's
    # .hidden keeps versions/ out of the walk).
    assert results == {"Travel Policy": "General/", "Travel_Policy.docx": "General/Travel Policy/"}
    cost = calls(fresh_mount.status()) - before
    print("the first search's calls:", cost)
    # The walk reads each document's details once (its renditions, attachments and
    # relationships folders are listed): 20 demo documents, and what the window showed.
    assert cost <= 40, fresh_mount.status()["api_calls_by_endpoint"]


def test_a_search_made_again_shows_the_same_results_and_costs_nothing(
    fresh_mount: MountProcess, desktop: Any
) -> None:
    files = desktop(fresh_mount.mountpoint)
    files.wait_for(lambda v: bool(v.rows))
    files.type_keys("ctrl+f", text="Travel")
    first = files.wait_for(lambda v: "Search" in v.title and not v.searching and v.found)
    before = calls(fresh_mount.status())
    files.type_keys("Escape")  # the search closes: back to the folder
    files.wait_for(lambda v: v.title == fresh_mount.mountpoint.name and not v.searching)
    files.type_keys("ctrl+f", text="Travel")
    again = files.wait_for(lambda v: "Search" in v.title and not v.searching and v.found)
    assert again.names == first.names
    # The tree was read once: searching it again costs the vault nothing.
    assert calls(fresh_mount.status()) == before
