"""Property-based fuzzing of every route of the local vault over real HTTP.

Each example picks one route of the application (the list is read from the routes
themselves, so a new route is fuzzed without a change here), fills its path with
random and hostile values (negative, beyond 64 bits, thousands of digits, not numbers,
unicode, unknown names, served and unserved API versions), and sends random query
parameters, headers and a random body: none, url-encoded, multipart (with and without
a file, with and without the boundary in the header), CSV, JSON (objects, arrays,
garbage) or raw bytes under a random Content-Type; as the admin, the editor, the
viewer, with no session or a wrong one.

It fails on any 5xx, on a redirect, on any error type outside the spec's table (plus
``OPERATION_NOT_ALLOWED``, the service's type for a state conflict, see docs/server.md)
in the envelope or in the per-row results of bulk answers, and on any traceback in the
server's log (an unexpected error of a POST answers a FAILURE, not a 5xx). The server is this
module's own (generous call limits, no lockout), so the run disturbs no other test.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from starlette.routing import Mount, Route

from tests.conftest import EDITOR, VIEWER, login
from vaultfs.server.routes import api_routes
from vaultfs.testing.vault_process import VaultProcess

#: The spec's error types, and the one the local vault adds (state conflicts).
ALLOWED_TYPES = frozenset(
    {
        "API_LIMIT_EXCEEDED",
        "USERNAME_OR_PASSWORD_INCORRECT",
        "INVALID_SESSION_ID",
        "USER_LOCKED_OUT",
        "INSUFFICIENT_ACCESS",
        "PARAMETER_REQUIRED",
        "INVALID_DATA",
        "INVALID_DOCUMENT",
        "MALFORMED_URL",
        "METHOD_NOT_SUPPORTED",
        "OPERATION_NOT_ALLOWED",
    }
)


def _all_routes() -> list[tuple[str, str]]:
    """(method, path template) of every route, versioned ones under /api/{version}."""
    found: list[tuple[str, str]] = []
    for route in api_routes():
        inner = route.routes if isinstance(route, Mount) else [route]
        prefix = route.path if isinstance(route, Mount) else ""
        for r in inner:
            assert isinstance(r, Route)
            found += [(m, prefix + r.path) for m in sorted(r.methods or ()) if m != "HEAD"]
    return found


ROUTES = _all_routes()
_PARAM = re.compile(r"\{(\w+)(?::\w+)?\}")

HOSTILE_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
NUMBERS = st.sampled_from(
    [
        *("0", "1", "2", "3", "7", "20", "-1", "+1", " 1", "01", "1.0", "1e3", "0x10", "١٢"),
        *(str(2**63 - 1), str(2**63), str(2**64), "9" * 30, "9" * 5000),
    ]
)
NAMES = st.sampled_from(
    [
        "general__c",
        "General",
        "clinical__c",
        "protocol__c",
        "final_protocol__c",
        "distribution__v",
        "approved_email__v",
        "viewable_rendition__v",
        "references__vs",
        "approve",
        "startApproval",
        "viewer__v.users",
        "owner__v.groups",
        "..",
        "%2e%2e",
        "nope__c",
    ]
)
VERSIONS = st.sampled_from(["v25.1", "v26.3", "v2.0", "v9.0", "v13.0", "v99.0", "v25.9", "x"])


def _path_value(name: str) -> st.SearchStrategy[str]:
    if name == "version":
        return VERSIONS
    # Percent-encoded: any character may reach the server, a "/" as %2F included.
    values = st.one_of(NUMBERS, NAMES, HOSTILE_TEXT.filter(bool))
    return values.map(lambda text: quote(text, safe=""))


QUERY_NAMES = st.sampled_from(
    [
        "limit",
        "start",
        "offset",
        "sort",
        "search",
        "scope",
        "versionscope",
        "named_filter",
        "createDraft",
        "reclassify",
        "lockDocument",
        "steadyState",
        "idParam",
        "format",
        "startDate",
        "endDate",
        "start_date",
        "end_date",
        "include_application",
        "includeInheritedFields",
        "event_type__v",
        "username",
        "suppressRendition",
    ]
)
VALUES = st.one_of(
    NUMBERS,
    NAMES,
    HOSTILE_TEXT,
    st.sampled_from(
        [
            "true",
            "false",
            "latestContent",
            "uploadedContent",
            "json",
            "xml",
            "all",
            "contents",
            "name__v desc",
            "2020-01-01",
            "2999-12-31T23:59:59Z",
            "external_id__v",
        ]
    ),
)
FIELD_NAMES = st.one_of(
    st.sampled_from(
        [
            "name__v",
            "type__v",
            "subtype__v",
            "classification__v",
            "lifecycle__v",
            "title__v",
            "id",
            "docIds",
            "target_doc_id__v",
            "target_doc_id",
            "relationship_type__v",
            "target_major_version__v",
            "major_version_number__v",
            "minor_version_number__v",
            "createDraft",
            "reclassify",
            "file",
            "event_type__v",
            "event_subtype__v",
            "classification__v",
            "recipient_email__v",
            "country__v",
            "dueDate",
            "Approver",
            "label__v",
            "members__v",
            "viewer__v.users",
            "description__v",
            "rendition_type__v",
            "external_id__v",
            "status__v",
            "source_document_id__v",
            "username",
            "password",
        ]
    ),
    HOSTILE_TEXT.filter(bool),
)
FIELDS = st.dictionaries(FIELD_NAMES, VALUES, max_size=6)
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), HOSTILE_TEXT),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(HOSTILE_TEXT, inner, max_size=3)
    ),
    max_leaves=8,
)


def _multipart(fields: dict[str, str], file: bytes | None) -> bytes:
    parts = b"".join(
        b'--fz\r\nContent-Disposition: form-data; name="'
        + name.encode()
        + b'"\r\n\r\n'
        + value.encode()
        + b"\r\n"
        for name, value in fields.items()
    )
    if file is not None:
        parts += b'--fz\r\nContent-Disposition: form-data; name="file"; filename="f.txt"\r\n\r\n'
        parts += file + b"\r\n"
    return parts + b"--fz--\r\n"


def _csv(header: list[str], rows: list[list[str]]) -> bytes:
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode()


@st.composite
def bodies(draw: st.DrawFn) -> tuple[bytes, dict[str, str]]:
    kind = draw(st.sampled_from(["none", "form", "multipart", "bare", "csv", "json", "raw"]))
    if kind == "none":
        return b"", {}
    if kind == "form":
        return httpx.QueryParams(draw(FIELDS)).__str__().encode(), {
            "Content-Type": "application/x-www-form-urlencoded"
        }
    if kind in ("multipart", "bare"):
        file = draw(st.one_of(st.none(), st.binary(max_size=64)))
        body = _multipart(draw(FIELDS), file)
        header = "multipart/form-data" + ("; boundary=fz" if kind == "multipart" else "")
        return body, {"Content-Type": header}
    if kind == "csv":
        header = draw(st.lists(FIELD_NAMES, min_size=1, max_size=4, unique=True))
        rows = draw(st.lists(st.lists(VALUES, max_size=5), max_size=4))
        return _csv(header, rows), {"Content-Type": "text/csv"}
    if kind == "json":
        value = draw(st.one_of(FIELDS, JSON_VALUES))
        return json.dumps(value).encode(), {"Content-Type": "application/json"}
    media = draw(
        st.sampled_from(["text/plain", "application/octet-stream", "application/json", ""])
    )
    return draw(st.binary(max_size=128)), {"Content-Type": media} if media else {}


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    args = ["--burst-limit", "1000000", "--daily-limit", "10000000"]
    args += ["--auth-burst-limit", "1000000", "--auth-delay-ms", "0", "--lockout-attempts", "0"]
    data: Path = tmp_path_factory.mktemp("fuzz") / "data"
    with VaultProcess(data, extra_args=args) as server:
        yield server


@pytest.fixture(scope="module")
def sessions(fuzz_server: VaultProcess) -> dict[str, str]:
    url = fuzz_server.url
    return {
        "admin": login(url),
        "editor": login(url, EDITOR),
        "viewer": login(url, VIEWER),
        "spare": login(url),
        "wrong": "not-a-session",
    }


@pytest.fixture(scope="module")
def fuzz_log(fuzz_server: VaultProcess) -> Path:
    return fuzz_server.log_path


@pytest.fixture(scope="module")
def http(fuzz_server: VaultProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=fuzz_server.url, timeout=30) as client:
        yield client


def _error_types(body: Any) -> Iterator[str]:
    """Every error type of an envelope, its bulk rows included."""
    if not isinstance(body, dict):
        return
    for error in body.get("errors") or []:
        yield error.get("type")
    for row in body.get("data") or [] if isinstance(body.get("data"), list) else []:
        if isinstance(row, dict):
            yield from (e.get("type") for e in row.get("errors") or [])


#: The request before the current one (a connection the server dropped may be its doing).
_PREVIOUS = ["(none)"]
SETTINGS = settings(
    max_examples=700,
    deadline=None,
    database=None,
    # The server keeps what earlier examples did: a replay is not the same request, so
    # shrinking would report a "flaky" test instead of the failure seen. Report it as is.
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@SETTINGS
@given(data=st.data())
def test_every_route_answers_without_5xx_and_with_spec_types(
    http: httpx.Client, sessions: dict[str, str], fuzz_log: Path, data: st.DataObject
) -> None:
    # Three requests per example: a few thousand in all, well under a minute.
    for _ in range(3):
        method, template = data.draw(st.sampled_from(ROUTES), label="route")
        path = _PARAM.sub(lambda m: data.draw(_path_value(m.group(1)), label=m.group(1)), template)
        query = data.draw(st.dictionaries(QUERY_NAMES, VALUES, max_size=3), label="query")
        body, headers = data.draw(bodies(), label="body")
        who = data.draw(st.sampled_from(["admin", "admin", "editor", "viewer", "none", "wrong"]))
        if template.endswith("/session"):
            who = "spare"  # ending the session the other requests use would end the run
        if who != "none":
            headers["Authorization"] = sessions[who]
        headers["Accept"] = data.draw(
            st.sampled_from(["application/json", "application/xml", "text/csv", "*/*", "x/y"])
        )
        if data.draw(st.booleans()):
            headers["X-VaultAPI-MigrationMode"] = "true"
        sent = f"{method} {path[:200]} {str(query)[:200]} {headers} {body[:200]!r}"
        try:
            response = http.request(
                method, httpx.URL(path, params=query), content=body or None, headers=headers
            )
        except httpx.TransportError as exc:
            raise AssertionError(f"{sent}: no answer ({exc!r}); after {_PREVIOUS[0]}") from None
        _PREVIOUS[0] = f"{sent} -> {response.status_code}"
        what = f"{sent} -> {response.status_code} {response.text[:300]}"
        assert response.status_code < 500, what
        assert response.status_code not in (301, 302, 307, 308), what
        if response.headers.get("content-type", "").startswith("application/json"):
            types = set(_error_types(response.json()))
        elif "xml" in response.headers.get("content-type", ""):
            types = set(re.findall(r"<errors><type>([^<]*)</type>", response.text))
        else:
            types = set()
        assert types <= ALLOWED_TYPES, what
    # A POST's unexpected error answers a FAILURE, not a 5xx: the log tells it apart.
    assert "Traceback" not in fuzz_log.read_text(errors="replace"), what
