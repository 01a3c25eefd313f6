"""The vault under test: a local vault server process, an API session, and curl.

Owns the server started for the run (``vaultfs.testing.vault_process.VaultProcess`` with limits high
enough that building the data set never waits for the burst window), the bench's own
API session (httpx, parallel single creates), and the curl commands that give the
reference figures. curl gets the session from a header file (mode 0600), never from
argv or a URL.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from vaultfs.testing.vault_process import ADMIN, DEMO_PASSWORD, VaultProcess
from vaultfs.wire import API_VERSION

__all__ = ["CurlTiming", "NewDocument", "Vault"]

#: concurrent create requests while building the data set
_CREATE_WORKERS = 12
#: generous limits (the data set alone is more than a default burst window allows) and a
#: session that outlives the quiet stretches of a long run
_SERVER_ARGS = [
    "--session-timeout", "1440", "--burst-limit", "10000000", "--daily-limit", "100000000",
]  # fmt: skip


@dataclass(frozen=True)
class NewDocument:
    """A document to create: its fields and its source file (bytes or a local path)."""

    fields: dict[str, str]
    filename: str
    content: bytes | Path


@dataclass(frozen=True)
class CurlTiming:
    first_byte: float
    total: float


class Vault:
    """A local vault server for the run, with an admin session of the bench's own."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.server = VaultProcess(workdir / "server", extra_args=_SERVER_ARGS)
        self.session_id = ""
        self.header_file = workdir / "curl-headers"
        self._local = threading.local()
        #: every thread's client, closed by ``stop``
        self._clients: list[httpx.Client] = []

    @property
    def api(self) -> str:
        return f"{self.server.url}/api/{API_VERSION}"

    def start(self) -> Vault:
        self.server.start()
        response = httpx.post(
            f"{self.api}/auth", data={"username": ADMIN, "password": DEMO_PASSWORD}
        )
        body = response.json()
        if body.get("responseStatus") != "SUCCESS":
            raise RuntimeError(f"login to the bench vault failed: {body}")
        self.session_id = body["sessionId"]
        fd = os.open(self.header_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"Authorization: {self.session_id}\n")
        return self

    def stop(self) -> None:
        for client in self._clients:
            client.close()
        self._clients.clear()
        self.server.stop()

    # --- the API, through httpx --------------------------------------------------

    def _client(self) -> httpx.Client:
        client: httpx.Client | None = getattr(self._local, "client", None)
        if client is None:
            client = httpx.Client(
                base_url=self.api, headers={"Authorization": self.session_id}, timeout=600
            )
            self._local.client = client
            self._clients.append(client)  # list.append is atomic: no lock needed
        return client

    def _create(self, document: NewDocument) -> int:
        if isinstance(document.content, Path):
            with document.content.open("rb") as f:
                body = self._post_create(document, f)
        else:
            body = self._post_create(document, document.content)
        if body.get("responseStatus") != "SUCCESS":
            raise RuntimeError(f"creating {document.fields.get('name__v')} failed: {body}")
        return int(body["id"])

    def _post_create(self, document: NewDocument, content: Any) -> dict[str, Any]:
        files = {"file": (document.filename, content, "application/octet-stream")}
        response = self._client().post("/objects/documents", data=document.fields, files=files)
        result: dict[str, Any] = response.json()
        return result

    def create(self, documents: Sequence[NewDocument]) -> list[int]:
        """Create ``documents`` with parallel single creates; their ids, in order.

        The bulk CSV create carries no file content, and every document here needs its
        own file, so single creates (one call each either way) are used throughout.
        """
        if len(documents) == 1:
            return [self._create(documents[0])]
        with ThreadPoolExecutor(_CREATE_WORKERS) as pool:
            return list(pool.map(self._create, documents))

    def document(self, doc_id: int) -> dict[str, Any]:
        record: dict[str, Any] = (
            self._client().get(f"/objects/documents/{doc_id}").json()["document"]
        )
        return record

    # --- curl: the reference client ----------------------------------------------

    def _curl(self, *args: str) -> str:
        result = subprocess.run(
            ["curl", "-sS", "-H", f"@{self.header_file}", *args],
            capture_output=True,
            text=True,
            check=True,
        )
        return result.stdout

    def curl_download(self, doc_id: int, expected_size: int) -> CurlTiming:
        """Download the latest source file of ``doc_id`` to /dev/null."""
        started = time.perf_counter()
        out = self._curl(
            "-o", "/dev/null", "-w", "%{time_starttransfer} %{size_download}",
            f"{self.api}/objects/documents/{doc_id}/file",
        )  # fmt: skip
        total = time.perf_counter() - started
        first_byte, size = out.split()
        if int(size) != expected_size:
            raise RuntimeError(f"curl downloaded {size} bytes of {doc_id}, not {expected_size}")
        return CurlTiming(float(first_byte), total)

    def curl_first_bytes(self, doc_id: int, count: int) -> float:
        """Seconds to download the first ``count`` bytes of ``doc_id``'s latest source
        file (a Range request): what a reader's first ``read`` of ``count`` bytes waits
        for. curl's ``time_starttransfer`` is the first byte of the headers, which the
        server may send before it has read any of the file."""
        out = self._curl(
            "-o", "/dev/null", "-r", f"0-{count - 1}", "-w", "%{time_total} %{size_download}",
            f"{self.api}/objects/documents/{doc_id}/file",
        )  # fmt: skip
        seconds, size = out.split()
        if int(size) != count:
            raise RuntimeError(f"curl downloaded {size} bytes of {doc_id}'s first {count}")
        return float(seconds)

    def curl_parallel_download(self, doc_ids: Sequence[int], parallel: int) -> float:
        """Seconds to download the latest files of ``doc_ids`` with ``parallel`` transfers
        at a time (one curl process, like a client with a pool of connections)."""
        config = self.workdir / "curl-parallel.conf"
        config.write_text(
            "".join(
                f'url = "{self.api}/objects/documents/{i}/file"\noutput = "/dev/null"\n'
                for i in doc_ids
            )
        )
        started = time.perf_counter()
        self._curl("--parallel", "--parallel-max", str(parallel), "--fail", "-K", str(config))
        return time.perf_counter() - started

    def curl_upload_draft(self, doc_id: int, path: Path) -> float:
        """Seconds to upload ``path`` as a new draft of ``doc_id``."""
        started = time.perf_counter()
        out = self._curl(
            "-F", "createDraft=uploadedContent", "-F", f"file=@{path}",
            f"{self.api}/objects/documents/{doc_id}",
        )  # fmt: skip
        seconds = time.perf_counter() - started
        body = json.loads(out)
        if body.get("responseStatus") != "SUCCESS":
            raise RuntimeError(f"curl upload to {doc_id} failed: {body}")
        return seconds
