"""Several vaults on one server: vault choice at login, host names, one vault per session."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import ADMIN, DEMO_PASSWORD, EDITOR, VIEWER
from tests.server.helpers import API, assert_error, assert_ok
from vaultfs.testing.vault_process import VaultProcess

CLINICAL = "clinical.localhost"


def _login(
    url: str, username: str = ADMIN, host: str | None = None, **extra: str
) -> dict[str, Any]:
    headers = {"Host": host} if host else {}
    r = httpx.post(
        url + API + "/auth",
        data={"username": username, "password": DEMO_PASSWORD, **extra},
        headers=headers,
    )
    return assert_ok(r)


def _documents(url: str, session: str, host: str | None = None) -> httpx.Response:
    headers = {"Authorization": session, **({"Host": host} if host else {})}
    return httpx.get(url + API + "/objects/documents", headers=headers)


def test_vault_ids_list_every_vault_with_absolute_urls(vault_server: VaultProcess) -> None:
    body = _login(vault_server.url)
    vaults = {v["name"]: v for v in body["vaultIds"]}
    assert set(vaults) == {"vaultfs Demo Vault", "vaultfs Clinical Vault"}
    port = vault_server.port
    # The vault the request addressed keeps the address the client used.
    assert vaults["vaultfs Demo Vault"]["url"] == f"{vault_server.url}/api"
    assert vaults["vaultfs Clinical Vault"]["url"] == f"http://{CLINICAL}:{port}/api"
    assert body["vaultId"] == vaults["vaultfs Demo Vault"]["id"]
    # The viewer is a member of the demo vault only.
    assert [v["name"] for v in _login(vault_server.url, VIEWER)["vaultIds"]] == [
        "vaultfs Demo Vault"
    ]


def test_vault_dns_in_body_then_host(vault_server: VaultProcess) -> None:
    url = vault_server.url
    demo = _login(url)
    clinical = _login(url, vaultDNS=CLINICAL)
    assert clinical["vaultId"] != demo["vaultId"]
    by_host = _login(url, host=f"{CLINICAL}:{vault_server.port}")
    assert by_host["vaultId"] == clinical["vaultId"]
    # The body's vaultDNS wins over the host.
    assert _login(url, host=CLINICAL, vaultDNS="localhost")["vaultId"] == demo["vaultId"]
    clinical_url = next(v["url"] for v in by_host["vaultIds"] if v["id"] == by_host["vaultId"])
    assert clinical_url == f"http://{CLINICAL}:{vault_server.port}/api"

    # Each vault has its own documents.
    names = {
        d["document"]["name__v"]
        for d in assert_ok(_documents(url, clinical["sessionId"]))["documents"]
    }
    assert names == {"Site Activation Checklist", "Monitoring Plan"}
    demo_total = assert_ok(_documents(url, demo["sessionId"]))["responseDetails"]["total"]
    assert demo_total >= 15


def test_a_session_is_valid_for_one_vault(vault_server: VaultProcess) -> None:
    url = vault_server.url
    clinical = _login(url, vaultDNS=CLINICAL)["sessionId"]
    demo = _login(url)["sessionId"]
    assert_ok(_documents(url, clinical, host=CLINICAL))
    assert_error(_documents(url, clinical, host="localhost"), "INVALID_SESSION_ID", 401)
    assert_error(_documents(url, demo, host=CLINICAL), "INVALID_SESSION_ID", 401)
    # A host that names no vault (an IP address) takes the session's vault.
    assert_ok(_documents(url, clinical))
    assert_ok(_documents(url, demo, host="localhost"))


def test_invalid_dns_falls_back_to_last_then_oldest_vault(fresh_vault: VaultProcess) -> None:
    url = fresh_vault.url
    # No vault at that DNS for the viewer: the oldest active vault of theirs.
    viewer = _login(url, VIEWER, vaultDNS=CLINICAL)
    assert viewer["vaultId"] == viewer["vaultIds"][0]["id"]
    # For the editor, the vault of the last login wins over the oldest one.
    clinical_id = _login(url, EDITOR, vaultDNS=CLINICAL)["vaultId"]
    assert _login(url, EDITOR, vaultDNS="nowhere.example")["vaultId"] == clinical_id
    assert _login(url, EDITOR, vaultDNS="localhost")["vaultId"] != clinical_id
    assert _login(url, EDITOR, vaultDNS="nowhere.example")["vaultId"] != clinical_id
