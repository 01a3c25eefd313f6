"""The vault REST API client: typed, async, over httpx.

Layering: client -> httpx, Authlib (and vaultfs.errors, vaultfs.wire). Never imports
the server or the bridge. Public names are re-exported here; the single sign-on's token
parts (Authlib, a third of a mount's start-up imports) load when first named, so a
password mount never loads them.
"""

from typing import TYPE_CHECKING, Any

from ._api import VaultApi
from ._client import VaultClient
from ._discovery import (
    DEFAULT_CLIENT_ID,
    AuthServer,
    Discovery,
    SsoProfile,
    complete_metadata,
    discover,
)
from ._errors import surely_not_sent
from ._probe import vault_answers
from ._reach import Reach, Reachability
from ._relationships import RelationshipPage
from ._retry import (
    CHECK_INS,
    CREATES,
    LOCKS,
    RECONNECTS,
    REQUESTS,
    WAITED_ON,
    Attempt,
    RetryPolicy,
    backoff,
    retrying,
)
from ._session import PasswordLogin, SessionSource
from ._types import Budget, Credentials, DocumentPage, Download

__all__ = [
    "CHECK_INS",
    "CREATES",
    "DEFAULT_CLIENT_ID",
    "LOCKS",
    "RECONNECTS",
    "REQUESTS",
    "WAITED_ON",
    "Attempt",
    "AuthServer",
    "Budget",
    "Credentials",
    "DeviceCode",
    "Discovery",
    "DocumentPage",
    "Download",
    "PasswordLogin",
    "Reach",
    "Reachability",
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

#: names of the modules that load Authlib, imported when one of them is first used
_LAZY = {
    "TokenLogin": "_oauth",
    "TokenStore": "_oauth",
    "oauth_client": "_oauth",
    "revoke": "_oauth",
    "DeviceCode": "_signin",
    "sign_in_with_browser": "_signin",
    "sign_in_with_device_code": "_signin",
}

if TYPE_CHECKING:
    from ._oauth import TokenLogin, TokenStore, oauth_client, revoke
    from ._signin import DeviceCode, sign_in_with_browser, sign_in_with_device_code


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
