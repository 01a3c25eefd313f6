"""Whether a check-in would replace what its edit did not start from.

One call before an upload reads the document's latest record; ``conflict`` says from it
whether the check-out still holds and no version came after the edit's base (a base
taken from the mount's index may be a poll behind, and is allowed for that).
"""

from __future__ import annotations

from typing import Any

from vaultfs.bridge.tree.versions import latest_version
from vaultfs.bridge.write.spool import store
from vaultfs.wire import parse_datetime

__all__ = ["conflict"]

#: How far apart the vault's clock and ours may be (seconds): a version created this
#: long before a check-out from the index began is taken for one the index missed
_CLOCK_SLACK = 5.0


def conflict(record: store.EntryRecord, document: dict[str, Any]) -> str | None:
    """Why a check-in of ``record`` would replace what its edit did not start from,
    as ``document`` (the vault's latest record, read just now) shows; None: it would
    not. The lock must still be held (``locked__v``: a lock held by another user makes
    the upload itself refused), and no version may have come after the edit's base."""
    if not document.get("locked__v"):
        return "the check-out was undone or released elsewhere while this edit was open"
    version = latest_version(document)
    latest = f"{version[0]}.{version[1]}" if version else None
    if record.base_version is None or latest == record.base_version:
        return None
    if not record.base_read:
        # The base came from the index, which may be a poll behind: a version made
        # before this check-out began is the true base, not a conflict.
        try:
            created = parse_datetime(str(document.get("version_creation_date__v"))).timestamp()
        except ValueError:
            created = None
        if created is not None and created < record.locked_at - _CLOCK_SLACK:
            return None
    return (
        f"version {latest} was checked in by someone else after this edit started from "
        f"version {record.base_version}"
    )
