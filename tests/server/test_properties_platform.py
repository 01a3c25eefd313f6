"""Property: no header, query value or authentication body makes the server answer 5xx,
and every answer carries the execution id and an envelope in the format asked for."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ADMIN, login
from vaultfs.testing.vault_process import VaultProcess

# Header values: printable latin-1 without CR/LF (what HTTP can carry at all).
_header_text = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF, blacklist_characters="\x7f"),
    max_size=40,
)
_any_text = st.text(max_size=40)
_versions = st.sampled_from(["v25.1", "v14.0", "v5.0", "v2.0", "v99.9", "x", "v1.0"])
_paths = st.sampled_from(
    [
        "/objects/domain",
        "/objects/domains",
        "/limits",
        "/metadata/objects",
        "/keep-alive",
        "/objects/documents/1/file",
        "/objects/documents/1/versions/0/1/thumbnail",
        "/objects/documents/1/attachments",
    ]
)
_accept = st.one_of(
    st.sampled_from(
        ["application/xml", "application/json", "text/csv", "text/xml;q=0.3, */*", "xml;q=x"]
    ),
    _header_text,
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    data: Path = tmp_path_factory.mktemp("props") / "data"
    # No throttle delays, no lockouts: the property is about answers, not limits.
    args = ["--auth-burst-limit", "100000", "--auth-delay-ms", "0", "--lockout-attempts", "0"]
    with VaultProcess(data, extra_args=args) as process:
        yield process


@pytest.fixture(scope="module")
def session(server: VaultProcess) -> str:
    return login(server.url)


def _latin1(headers: dict[str, str]) -> dict[str, bytes]:
    # Surrounding blanks are no part of a header value (HTTP strips them; h11 refuses).
    return {name: value.strip(" \t").encode("latin-1") for name, value in headers.items()}


def _check(response: httpx.Response) -> None:
    assert response.status_code < 500, response.text
    assert "X-ServiceAPI-ExecutionId" in response.headers
    media = response.headers.get("content-type", "")
    if media.startswith("application/json"):
        assert json.loads(response.content)["responseStatus"] in ("SUCCESS", "FAILURE")
    elif media.startswith("application/xml"):
        assert ET.fromstring(response.content).tag == "VaultResponse"


_SETTINGS = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_SETTINGS
@given(
    version=_versions,
    path=_paths,
    accept=_accept,
    fmt=_any_text,
    include=_any_text,
    host=st.one_of(st.none(), st.sampled_from(["clinical.localhost", "localhost", "[::1]"])),
    authorization=st.one_of(st.none(), _header_text),
)
def test_random_headers_and_queries(
    server: VaultProcess,
    session: str,
    version: str,
    path: str,
    accept: str,
    fmt: str,
    include: str,
    host: str | None,
    authorization: str | None,
) -> None:
    headers = {"Accept": accept}
    if host:
        headers["Host"] = host
    headers["Authorization"] = session if authorization is None else authorization
    params = {"format": fmt, "include_application": include, "lockDocument": include}
    url = f"{server.url}/api/{version}{path}"
    _check(httpx.get(url, headers=_latin1(headers), params=params))


@_SETTINGS
@given(
    fields=st.dictionaries(
        st.sampled_from(["username", "password", "vaultDNS", "client_id", "format"]),
        _any_text,
        max_size=5,
    ),
    multipart=st.booleans(),
    where=st.sampled_from(["/api/v25.1/auth", "/auth/discovery", "/auth/oauth/session/p"]),
    bearer=st.one_of(st.none(), _header_text),
)
def test_random_auth_bodies(
    server: VaultProcess, fields: dict[str, str], multipart: bool, where: str, bearer: str | None
) -> None:
    headers = _latin1({"Authorization": f"Bearer {bearer}"} if bearer is not None else {})
    if multipart:
        files = {k: (None, v.encode()) for k, v in fields.items()}
        r = httpx.post(server.url + where, files=files or {"x": (None, b"")}, headers=headers)
    else:
        r = httpx.post(server.url + where, data=fields, headers=headers)
    _check(r)
    if fields.get("username") == ADMIN and r.is_success and where.endswith("/auth"):
        assert r.json()["sessionId"]
