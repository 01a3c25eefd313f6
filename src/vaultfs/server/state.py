"""The running vault's shared objects, made by ``create_app`` (no globals)."""

from __future__ import annotations

from dataclasses import dataclass

from .config import ServerConfig
from .limits import RateLimiter
from .storage.blobs import BlobStore
from .storage.db import Database

__all__ = ["VaultState"]


@dataclass
class VaultState:
    config: ServerConfig
    db: Database
    blobs: BlobStore
    limiter: RateLimiter
