"""Two clients of one user never replace each other's save: the check-out is a lease.

The vault lets a user lock what that user already holds, so it cannot tell one user's
clients apart; each client's lease does (``write.lease``). Two mounts of one user on
separate caches, and a mount beside a WebDAV front of the same user, in each order of
open, write and close: the second client is refused (EBUSY, 423) while the first holds
the check-out, takes it once the first's check-in is done, and starts from that save.
Every save reported done is in the latest version; nothing goes to lost+found.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.faults.test_conflicts_and_restarts import CHECKLIST, latest, lock_of, versions
from tests.webdav.test_webdav_front import lock_body
from vaultfs.testing.mount_process import MountProcess
from vaultfs.testing.vault_process import VaultProcess
from vaultfs.testing.webdav_process import WebdavProcess

pytestmark = pytest.mark.mount


@contextmanager
def two_mounts(url: str, tmp_path: Path) -> Iterator[tuple[MountProcess, MountProcess, int]]:
    """Two mounts of one user on separate caches (A, B), and the checklist's document."""
    with MountProcess(url, tmp_path / "a") as a, MountProcess(url, tmp_path / "b") as b:
        yield a, b, int(os.getxattr((a.mountpoint / CHECKLIST).parent, "user.vault.id"))


def nothing_lost(*mounts: MountProcess) -> None:
    for mount in mounts:
        status = mount.settle()
        assert status["lost_and_found"] == [], status["lost_and_found"]
        assert status["pending_uploads"] == [], status["pending_uploads"]


def test_a_second_mount_is_refused_while_the_first_writes_and_starts_from_its_save(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    """A writes (checks out); B's write is refused with EBUSY, not checked out "again";
    A's close checks in; B's next append starts from A's save: both lines are in."""
    with two_mounts(fresh_vault.url, tmp_path) as (a, b, doc_id):
        path_a, path_b = a.mountpoint / CHECKLIST, b.mountpoint / CHECKLIST
        original = path_a.read_bytes()
        before = versions(api, doc_id)
        with open(path_a, "ab", buffering=0) as f:
            f.write(b"written in mount A\n")  # A checks out
            with open(path_b, "ab", buffering=0) as g, pytest.raises(OSError) as refused:
                g.write(b"written in mount B\n")
            assert refused.value.errno == errno.EBUSY
            assert "another client" in b.log()
        a.settle()
        assert latest(api, doc_id) == original + b"written in mount A\n"
        with open(path_b, "ab", buffering=0) as g:
            g.write(b"written in mount B\n")
        nothing_lost(a, b)
        assert latest(api, doc_id) == original + b"written in mount A\nwritten in mount B\n"
        assert len(versions(api, doc_id)) == len(before) + 2
        assert not lock_of(api, doc_id)


def test_the_first_mount_is_refused_while_the_second_holds_it_and_closes_first(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    """The other order: B checks out first and closes while A waits; A's write, refused
    while B held the check-out, goes through after and keeps B's line."""
    with two_mounts(fresh_vault.url, tmp_path) as (a, b, doc_id):
        path_a, path_b = a.mountpoint / CHECKLIST, b.mountpoint / CHECKLIST
        original = path_a.read_bytes()
        with open(path_a, "ab", buffering=0) as f:
            with open(path_b, "ab", buffering=0) as g:
                g.write(b"written in mount B\n")  # B checks out
                with pytest.raises(OSError) as refused:
                    f.write(b"written in mount A\n")
                assert refused.value.errno == errno.EBUSY
            b.settle()  # B's close checked in and released the check-out
            f.write(b"written in mount A\n")
        nothing_lost(a, b)
        assert latest(api, doc_id) == original + b"written in mount B\nwritten in mount A\n"
        assert not lock_of(api, doc_id)


def test_a_mount_and_a_webdav_drive_of_one_user_are_two_holders(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    """The mount's save refuses the drive's LOCK and PUT (423); the drive's LOCK refuses
    the mount's write (EBUSY); each save, once the other is done, is kept."""
    (tmp_path / "dav").mkdir()
    front = WebdavProcess(fresh_vault.url, tmp_path / "dav").start()
    try:
        with (
            MountProcess(fresh_vault.url, tmp_path / "m") as mount,
            httpx.Client(base_url=front.address, timeout=60) as dav,
        ):
            path = mount.mountpoint / CHECKLIST
            url = "/" + CHECKLIST
            doc_id = int(os.getxattr(path.parent, "user.vault.id"))
            original = path.read_bytes()
            with open(path, "ab", buffering=0) as f:
                f.write(b"from the mount\n")  # the mount checks out
                assert dav.request("LOCK", url, content=lock_body()).status_code == 423
                assert dav.put(url, content=b"from the drive\n").status_code == 423
            mount.settle()
            assert latest(api, doc_id) == original + b"from the mount\n"

            r = dav.request("LOCK", url, headers={"Timeout": "Second-600"}, content=lock_body())
            assert r.status_code == 200, r.text
            token = r.headers["Lock-Token"]
            with open(path, "ab", buffering=0) as f, pytest.raises(OSError) as refused:
                f.write(b"from the mount again\n")
            assert refused.value.errno == errno.EBUSY
            put = dav.put(url, content=b"from the drive\n", headers={"If": f"({token})"})
            assert put.status_code in (200, 201, 204), put.text
            assert dav.request("UNLOCK", url, headers={"Lock-Token": token}).status_code == 204
            assert latest(api, doc_id) == b"from the drive\n"
            nothing_lost(mount)
            assert not lock_of(api, doc_id)
    finally:
        front.stop()


def vaultfs(*args: object) -> None:
    subprocess.run([sys.executable, "-m", "vaultfs", *map(str, args)], check=True, timeout=120)


def test_a_hundred_appends_and_field_sets_back_to_back_on_two_mounts_lose_nothing(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    """Two commands back to back a hundred times (an append by the shell, then a
    setfattr), every tenth append through the user's other mount, as fast as they come:
    each append its program was not told of an error about is in the vault, in order,
    with the last title; one refused (the other mount's check-in still held) is EBUSY
    and nothing of it is anywhere; nothing goes to lost+found."""
    with two_mounts(fresh_vault.url, tmp_path) as (a, b, doc_id):
        path_a, path_b = a.mountpoint / CHECKLIST, b.mountpoint / CHECKLIST
        original = path_a.read_bytes()
        taken: list[bytes] = []
        for i in range(100):
            line = f"line {i}\n".encode()
            if i % 10:
                appended = subprocess.run(
                    ["sh", "-c", 'printf "%s" "$2" >> "$1"', "sh", path_a, line.decode()],
                    capture_output=True,
                    check=False,
                )
                assert appended.returncode == 0, appended.stderr  # its own mount's save
                taken.append(line)
            else:  # the other mount: refused while A's check-in holds the lease
                try:
                    with open(path_b, "ab", buffering=0) as g:
                        g.write(line)
                    taken.append(line)
                except OSError as exc:
                    assert exc.errno == errno.EBUSY, exc
                vaultfs("sync", path_b)  # B's save is in the vault, then A sees it
                vaultfs("refresh", a.mountpoint)
            subprocess.run(
                ["setfattr", "-n", "user.vault.title__v", "-v", f"title {i}", str(path_a)],
                check=True,
            )
        nothing_lost(a, b)
        assert latest(api, doc_id) == original + b"".join(taken)
        assert len(taken) >= 90  # A's own appends are never refused
        record = api.get(f"/objects/documents/{doc_id}").json()["document"]
        assert record["title__v"] == "title 99"
        assert path_a.read_bytes() == original + b"".join(taken)
        assert not lock_of(api, doc_id)
