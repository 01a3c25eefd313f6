"""The vault REST API client: typed, async, over httpx.

Layering: client -> httpx (and vaultfs.errors, vaultfs.wire). Never imports the
server or the bridge. Public names are re-exported here.
"""

from ._client import VaultClient
from ._errors import surely_not_sent
from ._probe import vault_answers
from ._relationships import RelationshipPage
from ._retry import backoff
from ._types import Budget, Credentials, DocumentPage, Download

__all__ = [
    "Budget",
    "Credentials",
    "DocumentPage",
    "Download",
    "RelationshipPage",
    "VaultClient",
    "backoff",
    "surely_not_sent",
    "vault_answers",
]
