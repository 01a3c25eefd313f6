"""Lockout after repeated failed logins, and unlocking with ``vaultfs serve-admin``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from tests.conftest import ADMIN, DEMO_PASSWORD, EDITOR, VIEWER
from tests.server.helpers import API, assert_error, assert_ok
from vaultfs.testing.vault_process import VaultProcess


def _login(url: str, username: str, password: str) -> httpx.Response:
    return httpx.post(url + API + "/auth", data={"username": username, "password": password})


def _unlock(data_dir: Path, username: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vaultfs", "serve-admin", "unlock", username, "--data", data_dir],
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_lockout_and_unlock(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with VaultProcess(data, extra_args=["--lockout-attempts", "3"]) as server:
        for _ in range(2):
            assert_error(_login(server.url, EDITOR, "wrong"), "USERNAME_OR_PASSWORD_INCORRECT", 401)
        # The failure that reaches the limit locks the account, and says what a wrong
        # password says for any account, existing or not: no user name is revealed.
        assert_error(_login(server.url, EDITOR, "wrong"), "USERNAME_OR_PASSWORD_INCORRECT", 401)
        assert_error(_login(server.url, EDITOR, "wrong"), "USERNAME_OR_PASSWORD_INCORRECT", 401)
        assert_error(
            _login(server.url, "nobody@vaultfs.demo", "wrong"),
            "USERNAME_OR_PASSWORD_INCORRECT",
            401,
        )
        # Locked: the right password learns it; user names are case-insensitive.
        assert_error(_login(server.url, EDITOR, DEMO_PASSWORD), "USER_LOCKED_OUT", 403)
        assert_error(_login(server.url, EDITOR.upper(), DEMO_PASSWORD), "USER_LOCKED_OUT", 403)
        # Other accounts are not affected.
        assert_ok(_login(server.url, ADMIN, DEMO_PASSWORD))

        # An admin unlocks it while the server runs.
        done = _unlock(data, EDITOR)
        assert done.returncode == 0, done.stderr
        assert EDITOR in done.stdout
        assert_ok(_login(server.url, EDITOR, DEMO_PASSWORD))
        assert _unlock(data, "nobody@vaultfs.demo").returncode == 1

        # A successful login resets the count: failures must be consecutive.
        for _ in range(2):
            assert_error(_login(server.url, VIEWER, "wrong"), "USERNAME_OR_PASSWORD_INCORRECT")
        assert_ok(_login(server.url, VIEWER, DEMO_PASSWORD))
        for _ in range(2):
            assert_error(_login(server.url, VIEWER, "wrong"), "USERNAME_OR_PASSWORD_INCORRECT")
        assert_ok(_login(server.url, VIEWER, DEMO_PASSWORD))

        # Unknown user names answer like wrong passwords and lock nothing.
        for _ in range(4):
            r = _login(server.url, "ghost@vaultfs.demo", "x")
            assert_error(r, "USERNAME_OR_PASSWORD_INCORRECT", 401)

        # The lock is stored: it survives a restart.
        for _ in range(3):
            _login(server.url, ADMIN, "wrong")
        server.stop()
        server.start()
        assert_error(_login(server.url, ADMIN, DEMO_PASSWORD), "USER_LOCKED_OUT", 403)


def test_unlock_without_data(tmp_path: Path) -> None:
    done = _unlock(tmp_path / "none", ADMIN)
    assert done.returncode == 1
    assert "no vault data" in done.stderr
