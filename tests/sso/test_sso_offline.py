"""A single sign-on user offline (docs/user-guide.md "Offline"): the mount starts from
its kept index with the vault stopped (the vault's sign-in answer kept from the last
mount, the refresh token kept as ever), a save waits in the spool, and when the vault
is back with the sign-in revoked meanwhile (the refresh token no longer good), the
mount says "signed out", keeps the save, and goes in once the user signs in again.

A module of its own: it stops and starts the module's vault."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.ops.conftest import documents, latest_file, run_vaultfs
from tests.sso.conftest import SSO_USER, signing_in
from tests.sso.idp import Provider
from tests.sso.test_sso_mount import SsoMount
from vaultfs.testing.mount_process import can_mount
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = [
    pytest.mark.mount,
    pytest.mark.skipif(not can_mount(), reason="needs /dev/fuse and fusermount3"),
]

LINE = b"\nwritten offline, signed in again later\n"


def _md5(vault: VaultProcess, doc_id: int) -> str:
    return str(next(d for d in documents(vault) if d["id"] == doc_id)["md5checksum__v"])


def test_a_single_sign_on_mount_starts_offline_and_a_sign_in_refused_then_keeps_the_work(
    sso_vault: VaultProcess, provider: Provider, tmp_path: Path
) -> None:
    first = SsoMount(sso_vault.url, tmp_path)
    try:
        first.start()  # signs in (the device grant) and keeps the vault's answer
        doc = next(
            d for d in documents(sso_vault) if d.get("md5checksum__v") and not d.get("locked__v")
        )
        doc_id = int(doc["id"])
        before = latest_file(first.mountpoint, doc_id).read_bytes()  # kept from now on
    finally:
        first.stop()
    sso_vault.stop()
    again = SsoMount(sso_vault.url, tmp_path)  # the same sign-in and cache
    try:
        again.start()
        status = again.status()
        assert status["vault"]["state"] == "offline", status["vault"]
        path = latest_file(again.mountpoint, doc_id)
        assert path.read_bytes() == before
        with path.open("ab") as handle:
            handle.write(LINE)
        assert path.read_bytes() == before + LINE
        revoked = provider.revoke(SSO_USER)
        assert revoked.startswith("revoked "), revoked
        sso_vault.start()
        wait_until(
            lambda: again.status()["vault"]["state"] == "signed out",
            timeout=120,
            what="the sign-in refused once the vault is back",
        )
        status = again.status()
        assert [e["doc_id"] for e in status["pending_uploads"]] == [doc_id]
        assert status["session_state"] == "refused"
        assert _md5(sso_vault, doc_id) == doc["md5checksum__v"]  # nothing sent
        told = run_vaultfs("status", str(again.mountpoint), env=again.env)
        assert "signed out" in told.stdout
        # Signing in again (another terminal) is all it takes: the mount finds it.
        signed = signing_in(
            ["login", "--url", sso_vault.url, "--user", SSO_USER, "--device-code"], again.env
        )
        assert signed.returncode == 0, signed.stderr
        wait_until(
            lambda: again.status()["vault"]["state"] == "online",
            timeout=120,
            what="the mount signed in again",
        )
        wait_until(
            lambda: not again.status()["pending_uploads"],
            timeout=120,
            what="the save made offline checked in",
        )
        assert _md5(sso_vault, doc_id) == hashlib.md5(before + LINE).hexdigest()
    finally:
        again.stop()
