"""A real client of the service, unchanged: veevatools (PyPI) against ``vaultfs serve``.

veevatools is built on ``requests``; every call below is one of its own service
methods, with its defaults (it logs in at the newest API version it knows, asks
``GET /api/`` and moves to the newest version listed). Its authentication-type
discovery goes to the real service's central login host: the client's HTTP session
gets a transport adapter that sends that host's requests to the local vault instead
(the package itself is not changed, and the test never leaves the machine).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from requests.adapters import HTTPAdapter
from veevatools.veevavault import DocumentService, DomainService, VaultClient
from veevatools.veevavault.services.authentication import AuthenticationService
from veevatools.veevavault.services.lifecycle_and_workflow import (
    DocumentLifecycleWorkflowService,
)
from veevatools.veevavault.services.objects import ObjectMetadataService

from vaultfs.testing.vault_process import ADMIN, DEMO_PASSWORD, VaultProcess

LOGIN_HOST = "https://login.veevavault.com"
GENERAL = {"type_v": "General", "lifecycle_v": "General Lifecycle"}


class _ToLocalVault(HTTPAdapter):
    """Sends the central login host's requests to the local vault."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        assert request.url is not None
        request.url = self.url + request.url.removeprefix(LOGIN_HOST)
        return super().send(request, **kwargs)


@pytest.fixture(scope="module")
def vault(vault_server: VaultProcess) -> Iterator[VaultClient]:
    client = VaultClient()
    client._session.mount(LOGIN_HOST, _ToLocalVault(vault_server.url))
    client.authenticate(vaultURL=vault_server.url, vaultUserName=ADMIN, vaultPassword=DEMO_PASSWORD)
    yield client
    client._session.close()


@pytest.fixture(scope="module")
def docs(vault: VaultClient) -> DocumentService:
    return DocumentService(vault)


def ok(answer: Any) -> dict[str, Any]:
    assert isinstance(answer, dict), answer
    assert answer.get("responseStatus") == "SUCCESS", answer
    return answer


def test_login_with_its_defaults(vault: VaultClient) -> None:
    # It logged in at v26.3 (its default) and adopted the newest version listed.
    assert vault.sessionId and vault.vaultId == 1
    assert vault.api_version_negotiated
    assert vault.LatestAPIversion == "v26.3" == vault.APIversionList[-1]
    assert ok(vault.session_keep_alive())


def test_metadata(vault: VaultClient, docs: DocumentService) -> None:
    types = ok(docs.types.retrieve_all_document_types())["types"]
    assert "General" in {t["label"] for t in types}
    assert ok(docs.types.retrieve_document_type("general__c"))["name"] == "general__c"
    assert ok(docs.types.retrieve_document_subtype("clinical__c", "protocol__c"))
    assert ok(
        docs.types.retrieve_document_classification(
            "clinical__c", "protocol__c", "final_protocol__c"
        )
    )
    assert ok(docs.types.retrieve_document_type_relationships("general__c"))
    assert ok(docs.fields.retrieve_all_document_fields())["properties"]
    assert ok(docs.fields.retrieve_common_document_fields("1,2"))
    assert ok(docs.locks.retrieve_document_lock_metadata())["properties"]
    assert ok(docs.events.retrieve_document_event_types())["events"]
    assert ok(docs.events.retrieve_document_event_subtype_metadata("distribution__v", "engage__v"))
    assert ok(ObjectMetadataService(vault).retrieve_limits_on_objects())["data"]
    domains = DomainService(vault)
    assert ok(domains.retrieve_domains())["domains"]
    assert ok(domains.retrieve_domain_information())["domain__v"]["vaults__v"]


def test_list_read_download(docs: DocumentService) -> None:
    listed = ok(docs.retrieval.retrieve_all_documents(limit=5, sort="id desc", start=0))
    assert listed["size"] == len(listed["documents"]) == 5
    found = ok(docs.retrieval.retrieve_all_documents(search="Handbook"))["documents"]
    doc_id = found[0]["document"]["id"]
    record = ok(docs.retrieval.retrieve_document(doc_id))["document"]
    numbers = [
        v["number"] for v in ok(docs.retrieval.retrieve_document_versions(doc_id))["versions"]
    ]
    assert f"{record['major_version_number__v']}.{record['minor_version_number__v']}" == numbers[-1]
    major, minor = (int(n) for n in numbers[0].split("."))
    assert ok(docs.retrieval.retrieve_document_version(doc_id, major, minor))
    latest = docs.retrieval.download_document_file(doc_id)
    assert latest.startswith(b"%PDF")
    assert docs.retrieval.download_document_version_file(doc_id, major, minor).startswith(b"%PDF")
    thumb = docs.retrieval.download_document_version_thumbnail(doc_id, major, minor)
    assert thumb.startswith(b"\x89PNG")
    assert ok(docs.renditions.retrieve_document_renditions(doc_id))["renditionTypes"]
    assert ok(docs.renditions.retrieve_document_version_renditions(doc_id, major, minor))
    rendition = docs.renditions.download_document_rendition_file(doc_id, "viewable_rendition__v")
    assert rendition.startswith(b"%PDF")
    attachments = ok(docs.attachments.retrieve_document_attachments(doc_id))["data"]
    att = attachments[0]["id"]
    assert ok(docs.attachments.retrieve_document_attachment_metadata(doc_id, att))
    assert ok(docs.attachments.retrieve_document_attachment_versions(doc_id, att))
    assert docs.attachments.download_document_attachment(doc_id, att).startswith(b"Attachment")


def test_create_draft_lock_and_change(docs: DocumentService, tmp_path: Path) -> None:
    source = tmp_path / "smoke.txt"
    source.write_bytes(b"veevatools smoke test\n")
    # create with a file (multipart with a boundary)
    doc_id = ok(
        docs.creation.create_single_document(file_path=str(source), name_v="vt", **GENERAL)
    )["id"]
    assert docs.retrieval.download_document_file(doc_id) == source.read_bytes()
    # a placeholder: multipart/form-data sent without its boundary parameter
    placeholder = ok(docs.creation.create_single_document(name_v="vt placeholder", **GENERAL))
    assert "filename__v" not in ok(docs.retrieval.retrieve_document(placeholder["id"]))["document"]
    # a draft from the latest content: a url-encoded body under a multipart Content-Type
    draft = ok(docs.update.create_single_document_version(doc_id, create_draft="latestContent"))
    assert (draft["major_version_number__v"], draft["minor_version_number__v"]) == (0, 2)
    # lock, read the lock, unlock
    assert ok(docs.locks.create_document_lock(doc_id))
    assert ok(docs.locks.retrieve_document_lock(doc_id))["lock"]["locked_by__v"]
    assert ok(docs.locks.delete_document_lock(doc_id))
    assert "locked_by__v" not in ok(docs.locks.retrieve_document_lock(doc_id)).get("lock", {})
    # field updates: form body, JSON body, a version's fields
    assert ok(docs.update.update_single_document(doc_id, {"title__v": "form"}))
    assert ok(docs.update.update_document_metadata(doc_id, {"title__v": "json"}))
    assert ok(docs.retrieval.retrieve_document(doc_id))["document"]["title__v"] == "json"
    assert ok(docs.update.update_document_version(doc_id, 0, 1, {"title__v": "first"}))
    # reclassify: `reclassify=true` in the form body
    assert ok(
        docs.update.reclassify_single_document(
            doc_id,
            type_v="Promotional Piece",
            subtype_v="Brochure",
            lifecycle_v="General Lifecycle",
        )
    )
    assert ok(docs.retrieval.retrieve_document(doc_id))["document"]["subtype__v"] == "Brochure"
    # renditions and attachments of the new document
    assert ok(
        docs.renditions.add_single_document_rendition(doc_id, "viewable_rendition__v", str(source))
    )
    assert ok(
        docs.renditions.replace_document_rendition(doc_id, "viewable_rendition__v", str(source))
    )
    assert ok(docs.renditions.delete_single_document_rendition(doc_id, "viewable_rendition__v"))
    assert ok(docs.attachments.create_document_attachment(doc_id, str(source)))
    # lifecycle: approve needs country__v on the document first
    lifecycle = DocumentLifecycleWorkflowService(docs.update.client)
    actions = ok(lifecycle.retrieve_document_user_actions(doc_id, 0, 2))["lifecycle_actions__v"]
    assert "approve" in {a["name__v"] for a in actions}
    assert ok(lifecycle.retrieve_document_entry_criteria(doc_id, 0, 2, "approve"))["properties"]
    assert ok(docs.update.update_single_document(doc_id, {"country__v": "united_states__v"}))
    assert ok(lifecycle.initiate_document_user_action(doc_id, 0, 2, "approve"))
    # delete a version, then the document; both are listed as deleted
    assert ok(docs.deletion.delete_single_document_version(doc_id, 0, 1))
    assert ok(docs.deletion.delete_single_document(placeholder["id"]))
    deleted = ok(docs.deletion.retrieve_deleted_document_ids())["data"]
    assert {placeholder["id"], doc_id} <= {d["id"] for d in deleted}


def test_relationships_and_events(docs: DocumentService) -> None:
    source, target = _create(docs, "vt source"), _create(docs, "vt target")
    # JSON body with the unsuffixed field names
    made = ok(
        docs.relationships.create_document_relationship(source, 0, 1, str(target), "references__vs")
    )
    listed = ok(docs.relationships.retrieve_document_relationships(source, 0, 1))["relationships"]
    assert made["id"] in {r["relationship"]["id"] for r in listed}
    assert ok(docs.relationships.retrieve_document_relationship(source, 0, 1, made["id"]))
    assert ok(docs.relationships.delete_document_relationship(source, 0, 1, made["id"]))
    assert ok(
        docs.events.create_document_event(
            source,
            0,
            1,
            "distribution__v",
            "approved_email__v",
            "sent__v",
            recipient_email__v="a@example.com",
        )
    )
    events = ok(docs.events.retrieve_document_events(source))["events"]
    assert [e["event_subtype__v"] for e in events] == ["approved_email__v"]


def test_bulk_create_update_delete(docs: DocumentService, tmp_path: Path) -> None:
    rows = [["name__v", "type__v", "lifecycle__v"]]
    rows += [[f"vt bulk {n}", "General", "General Lifecycle"] for n in range(3)]
    created = ok(docs.creation.create_multiple_documents(_csv(rows)))["data"]
    ids = [r["id"] for r in created if r["responseStatus"] == "SUCCESS"]
    assert len(ids) == 3
    # update from a CSV file
    update = tmp_path / "update.csv"
    update.write_text(_csv([["id", "title__v"], *[[str(i), "from csv"] for i in ids]]))
    assert _all_ok(docs.update.update_multiple_documents(file_path=str(update)))
    # update from a dict: veevatools sends it as JSON under a url-encoded Content-Type
    answer = docs.update.update_multiple_documents(
        data={"docIds": ",".join(map(str, ids)), "title__v": "from dict"}
    )
    assert _all_ok(answer)
    assert ok(docs.retrieval.retrieve_document(ids[0]))["document"]["title__v"] == "from dict"
    # documents with a second version, whose versions are deleted in bulk
    with_drafts = [_create(docs, f"vt draft {n}") for n in range(2)]
    for doc_id in with_drafts:
        ok(docs.update.create_single_document_version(doc_id, create_draft="latestContent"))
    versions = [["id", "major_version_number__v", "minor_version_number__v"]]
    versions += [[str(i), "0", "2"] for i in with_drafts]
    assert _all_ok(docs.deletion.delete_multiple_document_versions(_csv(versions)))


def _create(docs: DocumentService, name: str) -> int:
    answer = docs.creation.create_document_with_binary(
        b"x", f"{name}.txt", name, "General", None, None, "General Lifecycle"
    )
    doc_id: int = ok(answer)["id"]
    return doc_id


def _csv(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def _all_ok(answer: Any) -> bool:
    data = ok(answer)["data"]
    return all(row["responseStatus"] == "SUCCESS" for row in data) and bool(data)


def test_logout_ends_that_session_only(vault_server: VaultProcess, vault: VaultClient) -> None:
    other = VaultClient()
    other._session.mount(LOGIN_HOST, _ToLocalVault(vault_server.url))
    other.authenticate(vaultURL=vault_server.url, vaultUserName=ADMIN, vaultPassword=DEMO_PASSWORD)
    assert ok(AuthenticationService(other).logout()) and other.sessionId is None
    assert ok(vault.session_keep_alive())  # the module's session lives on
    other._session.close()
