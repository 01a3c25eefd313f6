"""Domain information, the caller's domains, limits, metadata index, sessions."""

from __future__ import annotations

import httpx

from tests.conftest import EDITOR, VIEWER
from tests.server.helpers import API, api_client, assert_error, assert_ok
from vaultfs.testing.vault_process import VaultProcess


def test_domain_information_for_domain_admins(vault_server: VaultProcess) -> None:
    admin = api_client(vault_server.url)
    body = assert_ok(admin.get("/objects/domain"))
    domain = body["domain__v"]
    assert domain["domain_name__v"] == "vaultfs"
    assert domain["domain_type__v"] == "Demo"
    vaults = {v["vault_name__v"]: v for v in domain["vaults__v"]}
    assert set(vaults) == {"vaultfs Demo Vault", "vaultfs Clinical Vault"}
    assert all(v["vault_status__v"] == "Active" for v in vaults.values())
    assert all("vault_application__v" not in v for v in vaults.values())
    assert vaults["vaultfs Clinical Vault"]["vault_family__v"] == {
        "name__v": "clinical_operations__v",
        "label__v": "Clinical Operations",
    }
    with_apps = assert_ok(admin.get("/objects/domain", params={"include_application": "true"}))
    apps = {
        v["vault_name__v"]: v["vault_application__v"] for v in with_apps["domain__v"]["vaults__v"]
    }
    assert apps == {"vaultfs Demo Vault": "PromoMats", "vaultfs Clinical Vault": "eTMF"}
    assert_error(
        admin.get("/objects/domain", params={"include_application": "maybe"}), "INVALID_DATA"
    )
    # Only domain admins.
    assert_error(
        api_client(vault_server.url, EDITOR).get("/objects/domain"), "INSUFFICIENT_ACCESS", 403
    )


def test_domains_of_the_caller(vault_server: VaultProcess) -> None:
    for user in (EDITOR, VIEWER):
        body = assert_ok(api_client(vault_server.url, user).get("/objects/domains"))
        assert body["domains"] == [{"name": "vaultfs", "type": "Demo"}]


def test_limits_and_metadata_index(vault_server: VaultProcess) -> None:
    client = api_client(vault_server.url, VIEWER)
    limits = {item["name"]: item for item in assert_ok(client.get("/limits"))["data"]}
    assert set(limits) == {"records_per_object", "custom_objects"}
    assert limits["records_per_object"]["max"] > 0
    assert 0 <= limits["custom_objects"]["remaining"] <= limits["custom_objects"]["max"]
    values = assert_ok(client.get("/metadata/objects"))["values"]
    assert set(values) >= {"documents", "users", "groups", "securitypolicies", "vobjects"}
    assert values["documents"] == vault_server.url + API + "/metadata/objects/documents/types"
    assert values["vobjects"] == vault_server.url + API + "/metadata/vobjects"
    # Without a session: INVALID_SESSION_ID.
    assert_error(httpx.get(vault_server.url + API + "/limits"), "INVALID_SESSION_ID", 401)


def test_keep_alive_and_end_session_in_xml(vault_server: VaultProcess) -> None:
    client = api_client(vault_server.url)
    xml = {"Accept": "application/xml"}
    alive = client.post("/keep-alive", headers=xml)
    assert b"<responseStatus>SUCCESS</responseStatus>" in alive.content
    assert client.delete("/session", headers=xml).status_code == 200
    gone = client.post("/keep-alive")
    assert_error(gone, "INVALID_SESSION_ID", 401)
