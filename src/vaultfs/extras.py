"""The optional parts of an install, and what to say when one is missing.

``pip install vaultfs`` installs the mount (the bridge and the client) and nothing
else: the local vault's stack is the ``server`` extra (Starlette, Hypercorn,
SQLAlchemy, Alembic, psycopg), its S3 content store the ``s3`` extra (boto3 and
botocore, which brings ``server`` along), and the WebDAV front (``vaultfs webdav``) the
``webdav`` extra (WsgiDAV, Hypercorn). A command that needs an extra that is not
installed says which one in one line and exits with 2, before importing anything of it
(so no traceback). A shared leaf: it imports nothing of vaultfs.
"""

from __future__ import annotations

import sys
from importlib.util import find_spec

__all__ = ["EXTRAS", "advice", "missing", "require"]

#: extra -> the top-level modules of what it installs (import names, not project names)
EXTRAS: dict[str, tuple[str, ...]] = {
    "server": ("starlette", "hypercorn", "python_multipart", "sqlalchemy", "alembic", "psycopg"),
    "s3": ("boto3", "botocore"),
    "webdav": ("wsgidav", "hypercorn"),
}

#: what each extra gives, for the message
_WHAT = {
    "server": "the local vault",
    "s3": "the local vault's S3 content store",
    "webdav": "the WebDAV front",
}


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` this environment cannot import (found, not loaded)."""
    return [name for name in EXTRAS[extra] if find_spec(name) is None]


def advice(extra: str, gone: list[str] | None = None) -> str:
    """What to tell a user who lacks ``extra``: what it is for and the pip command."""
    gone = missing(extra) if gone is None else gone
    return (
        f"{_WHAT[extra]} is not installed (no {', '.join(gone)});"
        f" install it with: pip install 'vaultfs[{extra}]'"
    )


def require(extra: str, command: str) -> bool:
    """Whether ``extra`` is installed; if not, say so for ``command`` on stderr."""
    gone = missing(extra)
    if not gone:
        return True
    print(f"{command}: {advice(extra, gone)}", file=sys.stderr)
    return False
