"""Fixtures of the single sign-on tests: a real OpenID provider, a vault that trusts it,
and ``vaultfs`` commands that sign in through the device grant as a person approves.

``provider`` is django-oauth-toolkit on loopback (``idp.Provider``) with access tokens
that live 8 s; ``sso_vault`` a local vault whose ``oauth.toml`` introspects its tokens
for the demo's single sign-on user, with sessions that end after 3 s idle. ``signing_in``
runs a ``vaultfs`` command with ``--device-code``, reads the code it shows, approves it
at the provider's pages and waits for the command. The commands get no password, no
keyring (the tokens go to a 0600 file under the test's ``XDG_STATE_HOME``) and no
display.
"""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.sso.idp import Provider, approve_device
from vaultfs.testing.vault_process import VaultProcess

__all__ = ["IDP_PASSWORD", "SSO_USER", "SignedIn", "signing_in", "vaultfs_env"]

#: the demo's single sign-on user (no vault password)
SSO_USER = "sso@vaultfs.demo"
#: their password at the identity provider (not at the vault)
IDP_PASSWORD = "idp-Passw0rd!"
#: 0.05 minutes: a session ends after 3 s without a call
SESSION_TIMEOUT = "0.05"
_CODE = re.compile(r"open (\S+) and enter the code (\S+)")


def vaultfs_env(state: Path) -> dict[str, str]:
    """The environment of a ``vaultfs`` command here: tokens in files under ``state``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "VAULTFS_PASSWORD")
    }
    env["XDG_STATE_HOME"] = str(state)
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    return env


@dataclass
class SignedIn:
    returncode: int
    #: everything the command wrote to stderr (what a person sees)
    stderr: str
    stdout: str


def signing_in(
    args: list[str], env: dict[str, str], *, approve: bool = True, timeout: float = 90.0
) -> SignedIn:
    """Run ``vaultfs ARGS`` (which must sign in with ``--device-code``) and approve its
    code at the provider as the user would."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "vaultfs", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    seen: list[str] = []
    try:
        deadline = time.monotonic() + timeout
        while True:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if line is None:
                break
            seen.append(line)
            found = _CODE.search(line)
            if found and approve:
                approve_device(found.group(1), found.group(2), SSO_USER, IDP_PASSWORD)
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        stdout = proc.stdout.read() if proc.stdout else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    return SignedIn(proc.returncode, "".join(seen), stdout)


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    idp = Provider(
        tmp_path_factory.mktemp("idp") / "provider", {SSO_USER: IDP_PASSWORD},
        access_token_seconds=8,
    )  # fmt: skip
    with idp:
        yield idp


@pytest.fixture(scope="module")
def sso_vault(
    provider: Provider, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VaultProcess]:
    data = tmp_path_factory.mktemp("sso-vault") / "data"
    data.mkdir()
    config = data / "oauth.toml"
    config.write_text(provider.oauth_toml("test_idp", [SSO_USER]))
    config.chmod(0o600)
    with VaultProcess(data, extra_args=["--session-timeout", SESSION_TIMEOUT]) as server:
        yield server
