"""The running vault's shared objects, made by ``create_app`` (no globals)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .config import ServerConfig
from .limits import ApiLimiter, AuthThrottle, LoginThrottle
from .oauth import OAuthProfile
from .storage.content import ContentStore
from .storage.db import Database

__all__ = ["VaultState"]


@dataclass
class VaultState:
    config: ServerConfig
    db: Database
    blobs: ContentStore
    limiter: ApiLimiter
    auth_throttle: LoginThrottle = field(default_factory=lambda: AuthThrottle(20, 60, 0))
    #: vault DNS (lower case) -> vault id, read at start
    hosts: dict[str, int] = field(default_factory=dict)
    #: the vault of requests whose host is no vault's DNS (127.0.0.1, localhost...)
    default_vault: int = 1
    #: OAuth 2.0 / OIDC profiles by id (DATA/oauth.toml)
    oauth: dict[str, OAuthProfile] = field(default_factory=dict)

    def vault_of_host(self, host: str) -> int | None:
        """The vault whose DNS name ``host`` is (None for 127.0.0.1 and other names)."""
        return self.hosts.get(host.lower().rstrip("."))

    def host_vault(self, host: str) -> int:
        """The vault a request to ``host`` addresses (the default vault when none)."""
        found = self.vault_of_host(host)
        return self.default_vault if found is None else found

    def addressed_dns(self, host: str) -> str:
        """The DNS name of the vault a request to ``host`` addresses."""
        if self.vault_of_host(host) is not None:
            return host.lower().rstrip(".")
        names = [dns for dns, vault_id in self.hosts.items() if vault_id == self.default_vault]
        return names[0] if names else host
