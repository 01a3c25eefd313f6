"""A throwaway S3-compatible server for tests and benchmarks, and a proxy that makes
a bucket refuse writes.

``S3Server`` runs moto's server mode (``moto.server``, a real S3 HTTP API) as a
process on 127.0.0.1 and a free port; ``stop`` ends it by PID (called from a
``finally`` by whoever started it). ``create_bucket`` gives each vault a bucket of
its own; ``env`` is what a vault server needs to reach it, the standard AWS variables
(no AWS file of the machine is read). ``client`` is a boto3 client for tests to look
into buckets.

``RefusingProxy`` forwards requests to the S3 server while ``refusing`` is false;
while true it answers every write (PUT, POST, DELETE) with S3's 403 AccessDenied, as
a bucket whose policy forbids writes does, and still forwards reads.
"""

from __future__ import annotations

import http.client
import itertools
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from vaultfs.testing.vault_process import (
    START_TIMEOUT,
    answers_http,
    end_process,
    free_port,
    wait_until,
)

__all__ = ["RefusingProxy", "S3Server", "s3_env"]

#: moto's server (``moto_server``), run by this Python (no PATH lookup).
_MAIN = "import sys; from moto.server import main; main(sys.argv[1:])"
_ACCESS_DENIED = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
    b"<Message>Access Denied</Message></Error>"
)


def s3_env(endpoint: str) -> dict[str, str]:
    """The environment of a process that talks to the S3 server at ``endpoint``."""
    nowhere = str(Path(tempfile.gettempdir()) / "vaultfs-no-aws-config")
    return {
        "AWS_ENDPOINT_URL_S3": endpoint,
        "AWS_ACCESS_KEY_ID": "vaultfs-test",
        "AWS_SECRET_ACCESS_KEY": "vaultfs-test-secret",
        "AWS_REGION": "us-east-1",
        # Never the machine's own AWS files or instance metadata.
        "AWS_CONFIG_FILE": nowhere,
        "AWS_SHARED_CREDENTIALS_FILE": nowhere,
        "AWS_EC2_METADATA_DISABLED": "true",
    }


class S3Server:
    def __init__(self, log_dir: Path) -> None:
        self.port = free_port()
        self.log_path = log_dir / "s3-server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self._buckets = itertools.count(1)
        self._client: Any = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        return s3_env(self.endpoint)

    def start(self) -> S3Server:
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _MAIN, "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self.env},
            )  # fmt: skip
        finally:
            log.close()
        try:
            wait_until(self._answers, timeout=START_TIMEOUT, what=f"S3 server on {self.endpoint}")
        except BaseException:
            self.stop()
            raise
        return self

    def _answers(self) -> bool:
        return answers_http(self.proc, self.endpoint + "/", "the S3 server")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        end_process(proc)

    def client(self) -> Any:
        if self._client is None:
            import boto3

            env = self.env
            self._client = boto3.session.Session().client(
                "s3",
                endpoint_url=self.endpoint,
                region_name=env["AWS_REGION"],
                aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
            )
        return self._client

    def create_bucket(self, name: str = "vault") -> str:
        bucket = f"{name}-{next(self._buckets)}"
        self.client().create_bucket(Bucket=bucket)
        return bucket

    def keys(self, bucket: str, prefix: str = "") -> set[str]:
        lister = self.client().get_paginator("list_objects_v2")
        pages = lister.paginate(Bucket=bucket, Prefix=prefix)
        return {obj["Key"] for page in pages for obj in page.get("Contents", [])}

    def unfinished_uploads(self, bucket: str) -> list[str]:
        answer = self.client().list_multipart_uploads(Bucket=bucket)
        return [upload["Key"] for upload in answer.get("Uploads", [])]

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class RefusingProxy:
    """Forwards to the S3 server at ``upstream_port``; refuses writes while
    ``refusing`` is set."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.refusing = threading.Event()
        #: writes refused so far
        self.refused = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _relay(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.command in ("PUT", "POST", "DELETE") and proxy.refusing.is_set():
                    proxy.refused += 1
                    self.close_connection = True
                    self.send_response(403)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(_ACCESS_DENIED)))
                    self.end_headers()
                    self.wfile.write(_ACCESS_DENIED)
                    return
                upstream = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=60)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    answer = upstream.getresponse()
                    data = answer.read()
                finally:
                    upstream.close()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("content-length", "connection", "transfer-encoding"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _relay

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> RefusingProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> RefusingProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
