"""Which content store a setting names (``ServerConfig.content``): the directory
``DATA/blobs`` by default, another directory, or an S3-compatible bucket."""

from __future__ import annotations

from pathlib import Path

from .blobs import BlobStore
from .content import ContentStore
from .s3 import S3Location, S3Store

__all__ = ["content_store"]


def content_store(content: str | None, data_dir: Path) -> ContentStore:
    """The store ``content`` names (not yet opened). A bucket's files are received in
    ``DATA/incoming`` before they are uploaded."""
    if content is None:
        return BlobStore(data_dir / "blobs")
    if content.startswith("s3://"):
        return S3Store(S3Location.parse(content), data_dir / "incoming")
    return BlobStore(Path(content))
