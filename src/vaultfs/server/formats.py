"""Response formats: JSON (default), XML for every JSON answer, CSV where the spec lists it.

The format a request wants is its ``format`` query parameter (``json``, ``xml``) when
given, else the best of its ``Accept`` header (``application/json``,
``application/xml``/``text/xml``, ``text/csv``; anything else means JSON).

* **XML** needs nothing from the routes: the middleware passes the send channel
  through ``xml_send``, which turns every JSON envelope into XML on the way out
  (``EXCEPTION`` envelopes stay JSON, as the spec says; file downloads are not JSON and
  pass untouched, so ``Accept`` only changes their error bodies). The shape: root
  ``<VaultResponse>``, one child element per key, a list as the key's element
  repeated once per item, ``null`` as an empty element, booleans ``true``/``false``.
  A key that is no valid XML name becomes ``<entry name="the key">``.
* **CSV** only where a route opts in: call ``render(request, body, csv_rows=rows)``
  with the envelope and the rows the CSV should have (e.g. the ``data`` items of a
  bulk answer or of the deleted-documents list). When the request wants CSV the
  answer is ``text/csv`` with one header line (the union of the rows' keys, in order
  of first appearance); otherwise the envelope goes out as JSON (or XML). Lists in a
  cell are joined with commas, objects are JSON.
"""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from typing import Any, Literal
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Scope, Send

from .envelope import json_response

__all__ = ["CSV_MEDIA_TYPE", "XML_MEDIA_TYPE", "render", "to_csv", "to_xml", "wanted", "xml_send"]

Format = Literal["json", "xml", "csv"]

XML_MEDIA_TYPE = "application/xml;charset=UTF-8"
CSV_MEDIA_TYPE = "text/csv;charset=UTF-8"
_ACCEPTED: dict[str, Format] = {
    "application/json": "json",
    "application/xml": "xml",
    "text/xml": "xml",
    "text/csv": "csv",
}
_XML_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9._-]*$")
# Characters XML 1.0 cannot carry at all (not even escaped).
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _from_accept(accept: str) -> Format:
    best: tuple[float, int, Format] | None = None
    for position, part in enumerate(accept.split(",")):
        media, _, params = part.strip().partition(";")
        kind = _ACCEPTED.get(media.strip().lower())
        if kind is None:
            continue
        quality = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        # Highest quality wins; among equals, the first listed.
        if quality > 0 and (best is None or (quality, -position) > (best[0], -best[1])):
            best = (quality, position, kind)
    return best[2] if best else "json"


def wanted(scope: Scope) -> Format:
    """The format the request asks for (``format`` parameter over ``Accept``)."""
    for key, value in parse_qsl(scope.get("query_string", b"").decode("latin-1")):
        if key == "format" and value.lower() in ("json", "xml"):
            return "json" if value.lower() == "json" else "xml"
    for key, value in scope.get("headers", []):
        if key == b"accept":
            return _from_accept(value.decode("latin-1"))
    return "json"


# --- XML ------------------------------------------------------------------------


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return _XML_INVALID.sub("\ufffd", str(value))


def _element(parent: ET.Element, key: str, value: Any) -> None:
    if isinstance(value, list):
        for item in value:
            _element(parent, key, item)
        return
    if _XML_NAME.match(key) and not key.lower().startswith("xml"):
        child = ET.SubElement(parent, key)
    else:
        child = ET.SubElement(parent, "entry", name=_text(key))
    if isinstance(value, Mapping):
        for sub_key, sub_value in value.items():
            _element(child, str(sub_key), sub_value)
    elif value is not None:
        child.text = _text(value)


def to_xml(body: Mapping[str, Any]) -> bytes:
    """The envelope as ``<VaultResponse>`` XML (see the module docstring)."""
    root = ET.Element("VaultResponse")
    for key, value in body.items():
        _element(root, str(key), value)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="utf-8")


def xml_send(send: Send) -> Send:
    """A send channel that turns JSON envelopes (except ``EXCEPTION``) into XML."""
    start: Message | None = None
    chunks: list[bytes] = []

    async def send_xml(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            content_type = dict(message.get("headers", [])).get(b"content-type", b"")
            if content_type.startswith(b"application/json"):
                start = message
                return
        elif message["type"] == "http.response.body" and start is not None:
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            data = b"".join(chunks)
            media = b"application/json;charset=UTF-8"
            try:
                body = json.loads(data)
            except ValueError:
                body = None
            if isinstance(body, dict) and body.get("responseStatus") != "EXCEPTION":
                data, media = to_xml(body), XML_MEDIA_TYPE.encode()
            headers = [
                (k, v)
                for k, v in start.get("headers", [])
                if k not in (b"content-type", b"content-length")
            ]
            headers += [(b"content-type", media), (b"content-length", str(len(data)).encode())]
            await send({**start, "headers": headers})
            message = {"type": "http.response.body", "body": data, "more_body": False}
        await send(message)

    return send_xml


# --- CSV ------------------------------------------------------------------------


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_cell(v) for v in value)
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def to_csv(rows: Iterable[Mapping[str, Any]]) -> bytes:
    rows = list(rows)
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(_cell(row.get(column)) for column in columns)
    return out.getvalue().encode()


def render(
    request: Request,
    body: Mapping[str, Any],
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
    csv_rows: Iterable[Mapping[str, Any]] | None = None,
) -> Response:
    """The answer in the format the request wants (CSV only when ``csv_rows`` is given)."""
    if csv_rows is not None and wanted(request.scope) == "csv":
        return Response(
            to_csv(csv_rows), status_code=status, media_type=CSV_MEDIA_TYPE, headers=headers
        )
    return json_response(dict(body), status, headers)
