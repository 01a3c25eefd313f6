"""The test processes make httpx's default TLS settings once, not for every client.

httpx builds an ``ssl.SSLContext`` for each client and for each call without one
(``httpx.get``, ``httpx.post``), reading certifi's whole bundle of certificates: 40-70 ms
of CPU each time. The suite makes thousands of them (a login per test, readiness polls
every 50 ms), which on a machine of two cores cost as much CPU as the servers the tests
start. ``share_default_tls`` makes httpx hand out one context per set of inputs instead:
the same certificates and checks (the context for ``verify=True`` as httpx makes it,
keyed by the environment it reads), built once per process. Any other ``verify`` (a
context, a path, False) or a client certificate goes to httpx as before.
"""

from __future__ import annotations

import os
import ssl
from typing import Any

__all__ = ["share_default_tls"]


def share_default_tls() -> None:
    """Make httpx's transports reuse the context of ``verify=True`` (no-op on an httpx
    whose internals differ: the suite is then only slower)."""
    try:
        from httpx._transports import default as transports
    except ImportError:
        return
    make = getattr(transports, "create_ssl_context", None)
    if make is None or getattr(make, "shared", False):
        return
    made: dict[tuple[Any, ...], ssl.SSLContext] = {}

    def create_ssl_context(verify: Any = True, cert: Any = None, trust_env: bool = True) -> Any:
        if verify is not True or cert is not None:
            return make(verify=verify, cert=cert, trust_env=trust_env)
        # What httpx reads to choose the certificates, at each call as it does.
        key = (trust_env, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        if key not in made:
            made[key] = make(verify=verify, cert=cert, trust_env=trust_env)
        return made[key]

    create_ssl_context.shared = True  # type: ignore[attr-defined]
    transports.create_ssl_context = create_ssl_context  # type: ignore[assignment]
