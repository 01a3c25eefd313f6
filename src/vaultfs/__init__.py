"""vaultfs: mount a document vault as a drive, and a local vault server of its API.

Layering (imports run one way only; see docs/architecture.md):

    cli -> bridge.commands -> bridge.daemon -> bridge.fs -> bridge.write
        -> bridge.content -> bridge.tree -> client -> httpx
    cli -> server (create_app) -> server.routes -> server.storage

``errors`` and ``wire`` are shared leaves: everything may import them, they import
nothing of vaultfs.
"""

__version__ = "0.1.0"
