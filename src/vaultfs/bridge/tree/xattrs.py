"""Fields as extended attributes: ``user.vault.<field>`` names and their text values.

Owns the mapping between a record (a dict of fields) and xattr names and values:
strings as they are, booleans ``true``/``false``, numbers in decimal, null as the
empty value, arrays and objects as JSON.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["PREFIX", "field_of", "in_our_namespaces", "names_of", "value_of"]

PREFIX = "user.vault."


def in_our_namespaces(xattr_name: str) -> bool:
    """Whether a name lies where the mount has attributes (``user.``).

    Any other namespace (``security.selinux``, ``trusted.``, the POSIX ACL names
    ``system.posix_acl_*``: the mount has no ACLs) is not supported: ENOTSUP, the
    kernel's own answer for a namespace a file system has no handler for, which
    ``ls -l`` remembers for the whole mount instead of asking for every entry (with
    ENODATA it asked each entry for both ACL names: two round trips an entry).
    """
    return xattr_name.startswith("user.")


def names_of(record: dict[str, Any]) -> list[str]:
    return [PREFIX + name for name in sorted(record)]


def field_of(xattr_name: str) -> str | None:
    """The field an xattr name stands for, None when it is not one of ours."""
    if not xattr_name.startswith(PREFIX) or len(xattr_name) == len(PREFIX):
        return None
    return xattr_name[len(PREFIX) :]


def value_of(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bool):
        return b"true" if value else b"false"
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, int | float):
        return str(value).encode()
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
