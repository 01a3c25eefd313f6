"""A vault that uses single sign-on, mounted for real: the device grant approved at the
provider's pages, edits, a session renewed by the refresh token without a prompt, a
revoked sign-in reported while the spool keeps the work, and no token anywhere it could
leak (argv, logs, status)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.ops.conftest import documents, latest_file, run_vaultfs
from tests.sso.conftest import SSO_USER, SignedIn, signing_in, vaultfs_env
from tests.sso.idp import Provider
from vaultfs.testing.mount_process import can_mount, stop_daemon
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = [
    pytest.mark.mount,
    pytest.mark.skipif(not can_mount(), reason="needs /dev/fuse and fusermount3"),
]

#: longer than a session's idle timeout (3 s) and an access token's life (8 s): only the
#: passing of time ends them, so waiting is what is under test, not synchronisation. (A
#: life of 4 s ran out between a refresh and the vault's check of the token on a machine
#: at load 10: the session's exchange, the vault asking the provider, took 4 s there.)
IDLE = 9.0


@dataclass
class SsoMount:
    """A daemonised ``vaultfs mount`` of the single sign-on user."""

    url: str
    root: Path
    pid: int | None = None
    signed_in: SignedIn | None = None
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.env = vaultfs_env(self.state)

    @property
    def mountpoint(self) -> Path:
        return self.root / "mnt"

    @property
    def cache_dir(self) -> Path:
        return self.root / "cache"

    @property
    def state(self) -> Path:
        return self.root / "state"

    def start(self) -> SsoMount:
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        options = f"cache_dir={self.cache_dir},poll_interval=3600"
        self.signed_in = signing_in(
            ["mount", self.url, str(self.mountpoint), "--user", SSO_USER, "--device-code",
             "-o", options],
            self.env,
        )  # fmt: skip
        assert self.signed_in.returncode == 0, self.signed_in.stderr + self.log()
        self.pid = int(self.status()["pid"])
        return self

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads((self.mountpoint / ".vaultfs" / "status").read_text())
        return result

    def log(self) -> str:
        try:
            return (self.cache_dir / "vaultfs.log").read_text(errors="replace")
        except OSError:
            return ""

    def token_file(self) -> Path:
        [path] = (self.state / "vaultfs" / "sso").glob("*.json")
        return path

    def token(self) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.token_file().read_text())
        return found

    def stop(self) -> None:
        stop_daemon(self.mountpoint, self.pid)


@pytest.fixture
def sso_mount(sso_vault: VaultProcess, tmp_path: Path) -> Iterator[SsoMount]:
    mount = SsoMount(sso_vault.url, tmp_path)
    try:
        yield mount.start()
    finally:
        mount.stop()


def _editable(vault: VaultProcess) -> dict[str, Any]:
    return next(d for d in documents(vault) if d.get("md5checksum__v") and not d.get("locked__v"))


def _vault_md5(vault: VaultProcess, doc_id: int) -> str:
    return str(next(d for d in documents(vault) if d["id"] == doc_id)["md5checksum__v"])


def _append(mount: SsoMount, doc_id: int, text: bytes) -> bytes:
    path = latest_file(mount.mountpoint, doc_id)
    content = path.read_bytes() + text
    with path.open("ab") as handle:
        handle.write(text)
    return content


def _flush(mount: SsoMount) -> None:
    flushed = run_vaultfs("flush", str(mount.mountpoint), "--timeout", "60", env=mount.env)
    assert flushed.returncode == 0, flushed.stderr + mount.log()[-3000:]


def test_mount_signs_in_through_the_device_grant_and_edits(
    sso_mount: SsoMount, sso_vault: VaultProcess, provider: Provider
) -> None:
    assert sso_mount.signed_in is not None
    assert "enter the code" in sso_mount.signed_in.stderr
    status = sso_mount.status()
    assert status["user"] == SSO_USER and status["session_state"] == "active"
    assert status["api_calls_by_endpoint"].get("POST /auth/oauth/session", 0) >= 1
    assert "POST /auth" not in status["api_calls_by_endpoint"]  # no password login
    assert any(p.is_dir() for p in sso_mount.mountpoint.iterdir())

    doc = _editable(sso_vault)
    content = _append(sso_mount, int(doc["id"]), b"\nedited by the single sign-on user\n")
    _flush(sso_mount)
    assert _vault_md5(sso_vault, int(doc["id"])) == hashlib.md5(content).hexdigest()

    # The tokens are kept in a file only its owner may read, and nowhere else.
    path = sso_mount.token_file()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    token = sso_mount.token()
    secrets = [token["refresh_token"], token["access_token"]]
    assert all(len(s) >= 20 for s in secrets)
    assert sso_mount.pid is not None
    cmdline = Path(f"/proc/{sso_mount.pid}/cmdline").read_bytes().decode(errors="replace")
    environ = Path(f"/proc/{sso_mount.pid}/environ").read_bytes().decode(errors="replace")
    shown = run_vaultfs("status", str(sso_mount.mountpoint), "--json", env=sso_mount.env)
    assert shown.returncode == 0, shown.stderr
    places = {
        "argv": cmdline,
        "environment": environ,
        "mount log": sso_mount.log(),
        "vaultfs status": shown.stdout,
        ".vaultfs/status": json.dumps(sso_mount.status()),
        "what the mount command printed": sso_mount.signed_in.stderr + sso_mount.signed_in.stdout,
        "vault log": sso_vault.log_path.read_text(errors="replace"),
    }
    for where, text in places.items():
        for secret in secrets:
            assert secret not in text, f"a token in the {where}"
    assert "sso test_idp" in sso_mount.log()  # the log says how it signed in


def test_expired_session_is_renewed_with_the_refresh_token_without_a_prompt(
    sso_mount: SsoMount, sso_vault: VaultProcess
) -> None:
    before = sso_mount.token()
    doc = _editable(sso_vault)
    time.sleep(IDLE)  # the vault ends the idle session; the access token expires
    # Checking out and in needs the vault: a new session, from a refreshed token.
    content = _append(sso_mount, int(doc["id"]), b"\nafter the session expired\n")
    _flush(sso_mount)
    assert _vault_md5(sso_vault, int(doc["id"])) == hashlib.md5(content).hexdigest()

    log = sso_mount.log()
    assert f"session of {SSO_USER} expired; signing in again (sso test_idp)" in log
    assert f"refreshed the access token of {SSO_USER}" in log
    after = sso_mount.token()
    # The provider rotates refresh tokens: the new one was kept at once.
    assert after["refresh_token"] != before["refresh_token"]
    status = sso_mount.status()
    assert status["session_state"] == "active"
    assert status["api_calls_by_endpoint"]["POST /auth/oauth/session"] >= 2
    assert status["pending_uploads"] == []


def test_revoked_sign_in_is_reported_and_the_spool_keeps_the_work(
    sso_mount: SsoMount, sso_vault: VaultProcess, provider: Provider
) -> None:
    doc = _editable(sso_vault)
    doc_id = int(doc["id"])
    original_md5 = _vault_md5(sso_vault, doc_id)
    path = latest_file(sso_mount.mountpoint, doc_id)
    content = path.read_bytes() + b"\nwritten after the sign-in was revoked\n"
    handle = path.open("ab", buffering=0)
    try:
        handle.write(b"\n")  # the first write checks out, while the sign-in is good
        revoked = provider.revoke(SSO_USER)  # this mount's, and earlier tests' left over
        assert revoked.startswith("revoked ") and not revoked.startswith("revoked 0"), revoked
        time.sleep(IDLE)  # the session ends; only the revoked refresh token is left
        handle.write(b"written after the sign-in was revoked\n")
    finally:
        # The check-in cannot sign in; whether close() says so or the spool keeps it
        # quietly, the content must stay pending (asserted below).
        with contextlib.suppress(OSError):
            handle.close()

    def pending() -> list[dict[str, Any]] | None:
        entries = sso_mount.status()["pending_uploads"]
        return entries if entries and entries[0].get("last_error") else None

    [entry] = wait_until(pending, timeout=30, what="the failed check-in recorded")
    assert entry["doc_id"] == doc_id
    assert "refused the sign-in" in entry["last_error"], entry
    assert "vaultfs login" in entry["last_error"]
    assert sso_mount.status()["session_state"] == "refused"
    assert "invalid_grant" in sso_mount.log()
    assert _vault_md5(sso_vault, doc_id) == original_md5

    table = run_vaultfs("status", str(sso_mount.mountpoint), env=sso_mount.env)
    assert "pending uploads  1" in table.stdout

    # Signing in again (from another terminal) cures the running mount.
    again = signing_in(
        ["login", "--url", sso_vault.url, "--user", SSO_USER, "--device-code"], sso_mount.env
    )
    assert again.returncode == 0, again.stderr
    assert "signed in" in again.stdout
    _flush(sso_mount)
    assert _vault_md5(sso_vault, doc_id) == hashlib.md5(content).hexdigest()
    assert sso_mount.status()["session_state"] == "active"
