"""A real mount with the default (long) kernel timeouts still shows every change: by
another client within one poll, through the mount at once."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import admin_client, upload_draft
from vaultfs.testing.mount_process import MountProcess
from vaultfs.testing.vault_process import VaultProcess, wait_until

# Each way of PYFUSE3_WAYS (conftest): the kernel keeping listings two ways, and stock.
pytestmark = [pytest.mark.mount, pytest.mark.usefixtures("pyfuse3_features")]


def test_timeouts_are_long_yet_another_clients_changes_show_within_a_poll(
    own_mount: MountProcess, fresh_vault: VaultProcess
) -> None:
    assert "attr_timeout" not in own_mount.options  # the default: long timeouts
    source = own_mount.source_file(5)
    doc_dir = source.parent
    old = source.read_bytes()
    before = source.stat()  # cached by the kernel, with the exact size
    assert before.st_size == len(old)
    doc_before = doc_dir.stat()
    with admin_client(fresh_vault.url) as api:
        content = b"a longer content from another client\n" * 100
        upload_draft(api, 5, source.name, content)
        # Attributes come from the kernel's cache until a poll tells it to forget.
        own_mount.refresh()
        assert source.stat().st_mtime_ns != before.st_mtime_ns
        assert source.stat().st_size != len(old)
        assert doc_dir.stat().st_mtime_ns != doc_before.st_mtime_ns
        assert source.read_bytes() == content
        assert source.stat().st_size == len(content)
        r = api.put("/objects/documents/5", data={"name__v": "Renamed elsewhere"})
        assert r.json()["responseStatus"] == "SUCCESS", r.text
        # The kernel held the old name: it must forget it, not just list the new one
        # (the names are checked right after the poll, by a task of the mount).
        own_mount.refresh()
        wait_until(lambda: not doc_dir.exists(), timeout=10, what="the old name to go")
        assert (doc_dir.parent / "Renamed elsewhere" / source.name).read_bytes() == content


def test_a_save_and_a_setfattr_through_the_mount_show_at_once(own_mount: MountProcess) -> None:
    source = own_mount.source_file(6)
    before = source.stat()
    doc_before = source.parent.stat()
    content = b"saved through the mount, longer than before\n" * 50
    source.write_bytes(content)
    own_mount.settle()  # the check-in follows the last close
    after = source.stat()
    assert after.st_size == len(content)
    assert after.st_mtime_ns != before.st_mtime_ns
    assert source.parent.stat().st_mtime_ns != doc_before.st_mtime_ns
    subprocess.run(
        ["setfattr", "-n", "user.vault.title__v", "-v", "Fresh title", str(source.parent)],
        check=True,
    )
    assert os.getxattr(source, "user.vault.title__v") == b"Fresh title"
    # A field is no change of the file's content: its mtime stays that of the save (an
    # editor would take a new one for someone else's change to the file).
    assert source.stat().st_mtime_ns == after.st_mtime_ns
