"""vaultfs: mount a document vault as a drive, and a local vault server of its API.

Layering (imports run one way only; see docs/architecture.md):

    cli -> bridge.mount -> bridge.fuse_ops -> bridge.core -> bridge.{inodes, index,
    blobcache, spool} -> client -> httpx
    cli -> server (create_app) -> server.routes -> server.storage

``errors`` and ``wire`` are shared leaves: everything may import them, they import
nothing of vaultfs.
"""

__version__ = "0.1.0"
