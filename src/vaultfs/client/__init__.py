"""The vault REST API client: typed, async, over httpx.

Layering: client -> httpx, Authlib (and vaultfs.errors, vaultfs.wire). Never imports
the server or the bridge. Public names are re-exported here.
"""

from ._api import VaultApi
from ._client import VaultClient
from ._errors import surely_not_sent
from ._oauth import (
    DEFAULT_CLIENT_ID,
    AuthServer,
    Discovery,
    SsoProfile,
    TokenLogin,
    TokenStore,
    complete_metadata,
    discover,
    oauth_client,
    revoke,
)
from ._probe import vault_answers
from ._relationships import RelationshipPage
from ._retry import (
    CHECK_INS,
    CREATES,
    LOCKS,
    REQUESTS,
    Attempt,
    RetryPolicy,
    backoff,
    retrying,
)
from ._session import PasswordLogin, SessionSource
from ._signin import DeviceCode, sign_in_with_browser, sign_in_with_device_code
from ._types import Budget, Credentials, DocumentPage, Download

__all__ = [
    "CHECK_INS",
    "CREATES",
    "DEFAULT_CLIENT_ID",
    "LOCKS",
    "REQUESTS",
    "Attempt",
    "AuthServer",
    "Budget",
    "Credentials",
    "DeviceCode",
    "Discovery",
    "DocumentPage",
    "Download",
    "PasswordLogin",
    "RelationshipPage",
    "RetryPolicy",
    "SessionSource",
    "SsoProfile",
    "TokenLogin",
    "TokenStore",
    "VaultApi",
    "VaultClient",
    "backoff",
    "complete_metadata",
    "discover",
    "oauth_client",
    "retrying",
    "revoke",
    "sign_in_with_browser",
    "sign_in_with_device_code",
    "surely_not_sent",
    "vault_answers",
]
