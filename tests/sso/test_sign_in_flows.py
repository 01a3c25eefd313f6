"""The sign-in flows against the real provider, without a mount: the authorization code
flow with PKCE and its loopback redirect, a mount that has nobody to approve a sign-in,
``vaultfs logout``, and password users whom discovery leaves as they were."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import httpx

from tests.ops.conftest import run_vaultfs
from tests.sso.conftest import IDP_PASSWORD, SSO_USER, signing_in, vaultfs_env
from tests.sso.idp import CLIENT_ID, Provider, approve_authorization
from vaultfs.client import TokenLogin, VaultClient, complete_metadata, discover
from vaultfs.client import sign_in_with_browser as browser_flow
from vaultfs.testing.vault_process import ADMIN, VaultProcess


class Kept:
    """A token store in memory."""

    def __init__(self, token: dict[str, Any]) -> None:
        self.token: dict[str, Any] | None = token

    def load(self) -> dict[str, Any] | None:
        return self.token

    def save(self, token: dict[str, Any]) -> None:
        self.token = token


async def test_browser_sign_in_with_pkce_and_a_loopback_redirect(
    provider: Provider, sso_vault: VaultProcess
) -> None:
    found = await discover(sso_vault.url, SSO_USER, CLIENT_ID)
    assert found.sso and [p.id for p in found.profiles] == ["test_idp"]
    profile = await complete_metadata(found.profiles[0])
    assert profile.client_id == CLIENT_ID  # the vault's client_ids mapping
    opened: list[str] = []
    pages: list[str] = []

    def person(url: str) -> None:
        pages.append(approve_authorization(url, SSO_USER, IDP_PASSWORD))

    def open_url(url: str) -> None:
        opened.append(url)
        browser = threading.Thread(target=person, args=(url,), daemon=True)
        browser.start()

    token = await browser_flow(profile.server, CLIENT_ID, "openid vault", open_url, who=SSO_USER)
    [url] = opened
    assert url.startswith(provider.issuer + "/authorize/")
    assert "code_challenge_method=S256" in url and "code_challenge=" in url and "state=" in url
    assert "redirect_uri=http%3A%2F%2F127.0.0.1%3A" in url
    assert pages and "vaultfs is signed in" in pages[0]
    assert token["refresh_token"] and token["access_token"]
    assert "id_token" not in token

    # The vault takes the access token for a session of that user.
    kept = Kept(token)
    async with VaultClient(
        sso_vault.url, TokenLogin(SSO_USER, profile, CLIENT_ID, kept), max_retries=1
    ) as client:
        await client.login()
        assert client.session_state == "active"
        assert await client.document_types()
        assert client.budget.by_endpoint == {
            "POST /auth/oauth/session": 1,
            "GET /metadata/objects/documents/types": 1,
        }


def test_a_mount_without_a_stored_sign_in_nor_a_terminal_says_what_to_do(
    sso_vault: VaultProcess, tmp_path: Path
) -> None:
    (tmp_path / "mnt").mkdir()
    refused = run_vaultfs(
        "mount", sso_vault.url, str(tmp_path / "mnt"), "--user", SSO_USER,
        "-o", f"cache_dir={tmp_path / 'cache'}",
        env=vaultfs_env(tmp_path / "state"),
    )  # fmt: skip
    assert refused.returncode == 2
    assert "no sign-in is stored" in refused.stderr
    assert f"vaultfs login --url {sso_vault.url} --user {SSO_USER}" in refused.stderr
    assert not (tmp_path / "state").exists()


def test_logout_revokes_the_refresh_token_and_forgets_it(
    provider: Provider, sso_vault: VaultProcess, tmp_path: Path
) -> None:
    env = vaultfs_env(tmp_path / "state")
    signed = signing_in(["login", "--url", sso_vault.url, "--user", SSO_USER, "--device-code"], env)
    assert signed.returncode == 0, signed.stderr
    assert f"signed in to {sso_vault.url} as {SSO_USER}" in signed.stdout
    [path] = (tmp_path / "state" / "vaultfs" / "sso").glob("*.json")
    refresh_token = json.loads(path.read_text())["refresh_token"]

    done = run_vaultfs("logout", "--url", sso_vault.url, "--user", SSO_USER, env=env)
    assert done.returncode == 0, done.stderr
    assert "revoked at the identity provider and forgotten" in done.stdout
    assert not path.exists()
    refused = httpx.post(
        provider.issuer + "/token/",
        data={
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
            "client_id": CLIENT_ID,
        },
    )
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"

    again = run_vaultfs("logout", "--url", sso_vault.url, "--user", SSO_USER, env=env)
    assert again.returncode == 0 and "no sign-in" in again.stdout


def test_password_users_sign_in_as_before(sso_vault: VaultProcess, tmp_path: Path) -> None:
    told = run_vaultfs(
        "login", "--url", sso_vault.url, "--user", ADMIN, env=vaultfs_env(tmp_path / "state")
    )
    assert told.returncode == 1
    assert "signs in to" in told.stderr and "with a password" in told.stderr
