"""A pending upload seen through ``vaultfs status``, cured by ``vaultfs flush``, and an
unmount that refuses to leave it behind unless ``--force`` (which keeps it in the
spool for the next mount), or, offline, keeps it and says so; ``vaultfs refresh``.
Real daemons, a real server stopped and started."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import login
from tests.faultproxy import FaultProxy
from tests.ops.conftest import Daemon, documents, latest_file, needs_mount, run_vaultfs
from vaultfs.bridge.commands.control import alive
from vaultfs.testing.mount_process import calls_but_polls
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = [pytest.mark.mount, needs_mount]

#: retries=0: an outage reaches the spool (and close()) at once
OPTIONS = "retries=0"


def leave_pending(daemon: Daemon, vault: VaultProcess) -> tuple[dict[str, Any], bytes]:
    """Append to a document, then stop the vault before close(): close() succeeds (the
    content is safe in the spool), the check-in after it fails and the content waits in
    the spool. Returns the document and the new content."""
    doc = next(d for d in documents(vault) if d.get("md5checksum__v") and not d.get("locked__v"))
    path = latest_file(daemon.mountpoint, int(doc["id"]))
    original = path.read_bytes()
    handle = path.open("ab", buffering=0)
    handle.write(b"\nadded while the vault was away\n")  # checks out while the vault is up
    vault.stop()
    handle.close()
    wait_until(
        lambda: any(e["last_error"] for e in daemon.status()["pending_uploads"]),
        timeout=60,
        what="the failed check-in",
    )
    return doc, original + b"\nadded while the vault was away\n"


def vault_md5(vault: VaultProcess, doc_id: int) -> str:
    return str(next(d for d in documents(vault) if d["id"] == doc_id)["md5checksum__v"])


def test_status_shows_the_pending_upload_and_flush_sends_it(
    fresh_vault: VaultProcess, daemon_factory: Any
) -> None:
    daemon: Daemon = daemon_factory(fresh_vault.url, OPTIONS)
    doc, content = leave_pending(daemon, fresh_vault)
    doc_id = int(doc["id"])

    shown = run_vaultfs("status", str(daemon.mountpoint), "--json")
    assert shown.returncode == 0, shown.stderr
    status = json.loads(shown.stdout)
    [entry] = status["pending_uploads"]
    assert entry["doc_id"] == doc_id and entry["state"] != "editing"
    assert entry["last_error"] and entry["attempts"] >= 1
    table = run_vaultfs("status", str(daemon.mountpoint)).stdout
    # the file by its path in the mount, not by an id
    source = latest_file(daemon.mountpoint, doc_id)
    assert entry["path"] == str(source.relative_to(daemon.mountpoint))
    assert "pending uploads  1" in table and entry["path"] in table
    assert entry["last_error"].split(":")[0] in table
    listed = run_vaultfs("status", "--json")  # every vaultfs mount of /proc/mounts
    assert str(daemon.mountpoint) in [s.get("mountpoint") for s in json.loads(listed.stdout)]

    refused = run_vaultfs("flush", str(daemon.mountpoint), "--timeout", "1")
    assert refused.returncode == 1 and entry["path"] in refused.stderr

    fresh_vault.start()
    flushed = run_vaultfs("flush", str(daemon.mountpoint), "--timeout", "60")
    assert flushed.returncode == 0, flushed.stderr + daemon.log()
    assert daemon.status()["pending_uploads"] == []
    assert vault_md5(fresh_vault, doc_id) == hashlib.md5(content).hexdigest()

    done = run_vaultfs("umount", str(daemon.mountpoint))
    assert done.returncode == 0, done.stderr
    assert not os.path.ismount(daemon.mountpoint)
    assert daemon.pid is not None and not alive(daemon.pid)


def test_umount_refuses_to_drop_pending_work_unless_forced(
    fresh_vault: VaultProcess, daemon_factory: Any
) -> None:
    """The vault answers, and refuses the check-in for now (every POST answered 503 by
    a proxy in front of it): the unmount waits, then refuses; --force keeps it."""
    port = int(fresh_vault.url.rsplit(":", 1)[1])
    with FaultProxy(port, seed=1, share=1.0, faults=("503",), methods=("POST",)) as proxy:
        daemon: Daemon = daemon_factory(proxy.url, OPTIONS)
        doc = next(
            d for d in documents(fresh_vault) if d.get("md5checksum__v") and not d.get("locked__v")
        )
        doc_id = int(doc["id"])
        source = latest_file(daemon.mountpoint, doc_id)
        path = str(source.relative_to(daemon.mountpoint))
        with source.open("ab", buffering=0) as handle:
            handle.write(b"\nadded while the vault refused\n")  # checked out: no POST yet
            proxy.active = True
        wait_until(
            lambda: any(e["last_error"] for e in daemon.status()["pending_uploads"]),
            timeout=60,
            what="the refused check-in",
        )
        assert daemon.status()["vault"]["state"] == "online"  # a refusal, not an outage
        refused = run_vaultfs("umount", str(daemon.mountpoint), "--timeout", "1")
        assert refused.returncode == 1
        assert path in refused.stderr and "--force" in refused.stderr
        assert "once the vault is reachable" in refused.stderr
        assert "1 upload(s) pending" in refused.stdout  # progress while it waited
        assert os.path.ismount(daemon.mountpoint) and daemon.status()["pending_uploads"]
        forced = run_vaultfs("umount", str(daemon.mountpoint), "--force", "--timeout", "30")
        assert forced.returncode == 0, forced.stderr
        assert path in forced.stderr  # says what stays in the spool
        assert not os.path.ismount(daemon.mountpoint)
        assert daemon.pid is not None and not alive(daemon.pid)
        assert (daemon.cache_dir / "spool" / f"{doc_id}.json").exists()


def test_umount_offline_keeps_pending_work_says_so_and_the_next_mount_takes_it(
    fresh_vault: VaultProcess, daemon_factory: Any
) -> None:
    """The vault cannot be reached (docs/user-guide.md "Offline"): waiting would send
    nothing, so the unmount says what the spool keeps and unmounts at once."""
    daemon: Daemon = daemon_factory(fresh_vault.url, OPTIONS)
    doc, content = leave_pending(daemon, fresh_vault)
    doc_id = int(doc["id"])
    path = str(latest_file(daemon.mountpoint, doc_id).relative_to(daemon.mountpoint))
    wait_until(lambda: daemon.status()["vault"]["state"] == "offline", timeout=60, what="offline")
    said = run_vaultfs("umount", str(daemon.mountpoint), "--timeout", "30")
    assert said.returncode == 0, said.stderr
    assert path in said.stderr and "kept in the spool" in said.stderr
    assert not os.path.ismount(daemon.mountpoint)
    assert daemon.pid is not None and not alive(daemon.pid)
    assert (daemon.cache_dir / "spool" / f"{doc_id}.json").exists()

    # The next mount checks the kept content in by itself.
    fresh_vault.start()
    daemon.start()
    wait_until(
        lambda: vault_md5(fresh_vault, doc_id) == hashlib.md5(content).hexdigest(),
        timeout=60,
        what="the spool's check-in at the next mount",
    )
    wait_until(lambda: daemon.status()["pending_uploads"] == [], what="an empty spool")


def test_status_of_a_path_that_is_no_mount_fails_clearly(tmp_path: Path) -> None:
    result = run_vaultfs("status", str(tmp_path))
    assert result.returncode == 1 and "not answering" in result.stdout
    result = run_vaultfs("umount", str(tmp_path))
    assert result.returncode == 1 and "not a vaultfs mount" in result.stderr


def test_a_mount_left_dead_by_a_crash_is_cleared_by_the_next_mount(
    vault_server: VaultProcess, daemon_factory: Any
) -> None:
    daemon: Daemon = daemon_factory(vault_server.url)
    assert daemon.pid is not None
    os.kill(daemon.pid, signal.SIGKILL)
    wait_until(lambda: not alive(daemon.pid or 0), what="the killed daemon's exit")
    with pytest.raises(OSError) as dead:
        os.statvfs(daemon.mountpoint)
    assert dead.value.errno in (errno.ENOTCONN, errno.ECONNABORTED)
    daemon.start()  # as Restart=on-failure would
    assert os.listdir(daemon.mountpoint)


def test_refresh_shows_another_clients_document_at_once_and_says_when_the_vault_is_away(
    fresh_vault: VaultProcess, daemon_factory: Any
) -> None:
    daemon: Daemon = daemon_factory(fresh_vault.url, OPTIONS)  # the default poll: 30 s
    general = daemon.mountpoint / "General"
    os.listdir(general)  # listed before the other client's document exists
    r = httpx.post(
        f"{fresh_vault.url}/api/v25.1/objects/documents",
        headers={"Authorization": login(fresh_vault.url)},
        data={"type__v": "General", "lifecycle__v": "General Lifecycle", "name__v": "Refreshed"},
        files={"file": ("refreshed.txt", b"made by another client\n")},
    )
    assert r.json()["responseStatus"] == "SUCCESS", r.text
    before = daemon.status()

    done = run_vaultfs("refresh", str(daemon.mountpoint))
    assert done.returncode == 0, done.stderr
    assert "shows the vault as of now" in done.stdout
    assert (general / "Refreshed" / "refreshed.txt").read_bytes() == b"made by another client\n"
    after = daemon.status()
    assert after["index"]["polls_answered"] > before["index"]["polls_asked"]
    # One poll's calls: a page of documents and the deletions (the default poll may fall
    # in the window too), plus the file read.
    calls = after["api_calls"] - before["api_calls"]
    read = calls_but_polls(after) - calls_but_polls(before)
    assert read <= 2 and calls - read <= 4, after["api_calls_by_endpoint"]

    fresh_vault.stop()
    away = run_vaultfs("refresh", str(daemon.mountpoint))
    assert away.returncode == 1 and "did not answer" in away.stderr, away.stderr
