"""The content store in an S3-compatible bucket (AWS S3, MinIO, Ceph RGW, ...):
``vaultfs serve --content s3://BUCKET/PREFIX``.

Objects are ``PREFIX/<aa>/<bb>/<sha256>``, the directory store's layout under a key
prefix. Where the bucket is and who the server is come the way every S3 client takes
them (boto3's standard chain, never argv): ``AWS_ENDPOINT_URL_S3`` /
``AWS_ENDPOINT_URL`` or ``endpoint_url`` in the AWS config file, ``AWS_REGION``,
``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``, ``AWS_PROFILE``, the shared
credentials file, or an instance or container role.

boto3 is blocking: every call runs in a worker thread (uploads in the writer's
``finish``, downloads read the body in ``trio.to_thread``); its client is thread-safe
and pools connections.

Uploads: the file arrives complete on local disk first (``content.BlobWriter``, which
hashed it on the way), so its name is known before the first byte goes to the bucket
and no server-side copy is needed. Up to ``part_size`` it is one PutObject, above a
multipart upload with ``_PARTS_AT_ONCE`` parts in flight (memory: that many parts).
Every request carries Content-MD5, so the service checks each byte it stores, and is
conditional (``If-None-Match: *``): an object is never written over; when another
process stored the same content first, its object (identical bytes) stays. A failed
multipart upload is aborted, so nothing is visible; one a crash left behind is aborted
by ``sweep`` (and by the bucket lifecycle rule docs/operations.md recommends).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import re
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .content import (
    BlobInfo,
    ContentStore,
    ContentUnavailable,
    RangeNotSatisfiable,
    Reading,
    sweep_incoming,
)

__all__ = ["PART_SIZE", "S3Location", "S3Store"]

log = logging.getLogger("vaultfs.server")

#: Files up to this size are one PutObject; larger ones a multipart upload of parts
#: this size (S3 wants at least 5 MiB per part but the last).
PART_SIZE = 8 * 1024 * 1024
#: Parts of one upload sent at the same time.
_PARTS_AT_ONCE = 4
#: S3's most parts in one multipart upload.
_MAX_PARTS = 10_000
_SHA256 = re.compile(r"[0-9a-f]{64}")
_MISSING = {"404", "NoSuchKey", "NotFound"}


@dataclass(frozen=True)
class S3Location:
    """``s3://BUCKET/PREFIX``: a bucket and a key prefix ("" or ending in ``/``)."""

    bucket: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> S3Location:
        # The messages never repeat the URL: it may hold what should not be there.
        if not url.startswith("s3://"):
            raise ValueError("not an s3:// URL")
        bucket, _, prefix = url.removeprefix("s3://").partition("/")
        if not bucket or "@" in bucket or ":" in bucket:
            # Credentials never go in the URL (argv is public): the environment or the
            # AWS files hold them.
            raise ValueError(
                "write the content store as s3://BUCKET/PREFIX, with no credentials or"
                " endpoint in it (they come from AWS_* variables or the AWS config files)"
            )
        prefix = prefix.strip("/")
        return cls(bucket, prefix + "/" if prefix else "")

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


def make_client() -> Any:
    """An S3 client configured the standard way (environment, AWS config files)."""
    # Imported here: only servers that use a bucket pay for loading boto3.
    import boto3
    from botocore.config import Config

    config = Config(
        # Up to 40 worker threads of trio may talk to the bucket at once.
        max_pool_connections=48,
        retries={"mode": "standard", "max_attempts": 4},
        connect_timeout=10,
        read_timeout=120,
        user_agent_extra="vaultfs",
    )
    return boto3.session.Session().client("s3", config=config)


def _code(exc: Exception) -> str:
    response = getattr(exc, "response", None) or {}
    error = response.get("Error", {})
    return str(error.get("Code") or response.get("ResponseMetadata", {}).get("HTTPStatusCode"))


def _describe(exc: Exception) -> str:
    """What went wrong, for messages: the service's error code, or the transport's."""
    response = getattr(exc, "response", None)
    if response is not None:
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        code = _code(exc)
        return f"HTTP {status}" if code == str(status) else f"{code} (HTTP {status})"
    return type(exc).__name__


def _b64(hexdigest: str) -> str:
    return base64.b64encode(bytes.fromhex(hexdigest)).decode()


class S3Store(ContentStore):
    shared = True

    def __init__(
        self,
        location: S3Location,
        incoming: Path,
        *,
        client: Any = None,
        part_size: int = PART_SIZE,
    ) -> None:
        self.location = location
        self.incoming = incoming
        self.part_size = part_size
        self._client = client
        from botocore.exceptions import BotoCoreError, ClientError

        self._errors: tuple[type[Exception], ...] = (BotoCoreError, ClientError)

    def __str__(self) -> str:
        return str(self.location)

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = make_client()
        return self._client

    def key(self, sha256: str) -> str:
        return f"{self.location.prefix}{sha256[:2]}/{sha256[2:4]}/{sha256}"

    def open(self) -> None:
        self.incoming.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.incoming.chmod(0o700)
        try:
            self.client.head_bucket(Bucket=self.location.bucket)
        except self._errors as exc:
            raise ContentUnavailable(
                f"the bucket of {self.location} cannot be reached: {_describe(exc)}"
            ) from exc

    # writing ------------------------------------------------------------------------

    def keep(self, received: Path, blob: BlobInfo) -> None:
        key = self.key(blob.sha256)
        try:
            if self._head(key) is not None:
                return  # written once: these very bytes are there already
            if blob.size <= self.part_size:
                self._put(received, key, blob)
            else:
                self._put_parts(received, key, blob.size)
        except self._errors as exc:
            if _code(exc) == "PreconditionFailed":
                return  # another process stored the same content meanwhile
            log.warning("storing %s in %s failed: %s", blob.sha256, self.location, exc)
            raise ContentUnavailable(f"the file store refused the file: {_describe(exc)}") from exc
        finally:
            received.unlink(missing_ok=True)

    def _head(self, key: str) -> int | None:
        try:
            answer = self.client.head_object(Bucket=self.location.bucket, Key=key)
        except self._errors as exc:
            if _code(exc) in _MISSING:
                return None
            raise
        return int(answer["ContentLength"])

    def _put(self, received: Path, key: str, blob: BlobInfo) -> None:
        with received.open("rb") as body:
            self.client.put_object(
                Bucket=self.location.bucket,
                Key=key,
                Body=body,
                ContentLength=blob.size,
                ContentMD5=_b64(blob.md5),
                IfNoneMatch="*",
            )

    def _put_parts(self, received: Path, key: str, size: int) -> None:
        bucket = self.location.bucket
        part_size = max(self.part_size, -(-size // _MAX_PARTS))
        count = -(-size // part_size)
        upload_id = self.client.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]

        def send(number: int) -> dict[str, Any]:
            with received.open("rb") as f:
                f.seek((number - 1) * part_size)
                data = f.read(part_size)
            md5 = hashlib.md5(data, usedforsecurity=False).hexdigest()
            answer = self.client.upload_part(
                Bucket=bucket,
                Key=key,
                UploadId=upload_id,
                PartNumber=number,
                Body=data,
                ContentMD5=_b64(md5),
            )
            return {"PartNumber": number, "ETag": answer["ETag"]}

        try:
            with ThreadPoolExecutor(_PARTS_AT_ONCE, thread_name_prefix="s3-part") as pool:
                parts = list(pool.map(send, range(1, count + 1)))
            self.client.complete_multipart_upload(
                Bucket=bucket,
                Key=key,
                UploadId=upload_id,
                MultipartUpload={"Parts": parts},
                IfNoneMatch="*",
            )
        except BaseException:
            # Nothing of an unfinished upload is visible; aborting frees its parts.
            with contextlib.suppress(*self._errors):
                self.client.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
            raise

    # reading ------------------------------------------------------------------------

    def local_path(self, sha256: str) -> Path | None:
        return None

    def size(self, sha256: str) -> int | None:
        try:
            return self._head(self.key(sha256))
        except self._errors as exc:
            raise ContentUnavailable(f"the file store cannot be read: {_describe(exc)}") from exc

    def read(self, sha256: str, first: int | None = None, last: int | None = None) -> Reading:
        extra = {}
        if first is not None or last is not None:
            low, high = ("" if n is None else str(n) for n in (first, last))
            extra["Range"] = f"bytes={low}-{high}"
        try:
            answer = self.client.get_object(
                Bucket=self.location.bucket, Key=self.key(sha256), **extra
            )
        except self._errors as exc:
            code = _code(exc)
            if code in _MISSING:
                raise FileNotFoundError(f"{sha256} is not in {self.location}") from None
            if code in ("InvalidRange", "416"):
                size = self.size(sha256)
                raise RangeNotSatisfiable(size or 0) from None
            raise ContentUnavailable(f"the file store cannot be read: {_describe(exc)}") from exc
        length = int(answer["ContentLength"])
        start, size = 0, length
        found = re.fullmatch(r"bytes (\d+)-\d+/(\d+)", answer.get("ContentRange") or "")
        if found:
            start, size = int(found.group(1)), int(found.group(2))
        return Reading(body=answer["Body"], start=start, length=length, size=size)

    def names(self) -> Iterator[str]:
        for key, _ in self._objects():
            yield key.rsplit("/", 1)[-1]

    def _objects(self) -> Iterator[tuple[str, datetime]]:
        """(key, last modified) of every object of this store under its prefix."""
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.location.bucket, Prefix=self.location.prefix
        )
        for page in pages:
            for obj in page.get("Contents", []):
                name = obj["Key"].rsplit("/", 1)[-1]
                # Only names of this layout: other objects under the prefix are not ours.
                if _SHA256.fullmatch(name) and obj["Key"] == self.key(name):
                    yield obj["Key"], obj["LastModified"]

    # sweeping -----------------------------------------------------------------------

    def sweep(self, referenced: Iterable[str], min_age_seconds: float = 0.0) -> int:
        keep = set(referenced)
        cutoff = datetime.now(UTC) - timedelta(seconds=min_age_seconds)
        removed = sweep_incoming(self.incoming, min_age_seconds)
        bucket = self.location.bucket
        try:
            doomed = [
                key
                for key, modified in self._objects()
                if key.rsplit("/", 1)[-1] not in keep and modified <= cutoff
            ]
            for start in range(0, len(doomed), 1000):
                batch = [{"Key": key} for key in doomed[start : start + 1000]]
                self.client.delete_objects(Bucket=bucket, Delete={"Objects": batch, "Quiet": True})
            removed += len(doomed)
            # Multipart uploads a crash left unfinished: invisible, but they hold space.
            pages = self.client.get_paginator("list_multipart_uploads").paginate(
                Bucket=bucket, Prefix=self.location.prefix
            )
            for page in pages:
                for upload in page.get("Uploads", []):
                    if upload["Initiated"] <= cutoff:
                        self.client.abort_multipart_upload(
                            Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"]
                        )
                        removed += 1
        except self._errors as exc:
            raise ContentUnavailable(f"sweeping {self.location} failed: {_describe(exc)}") from exc
        return removed
