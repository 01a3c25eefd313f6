"""Which lifecycle states are steady: the latest source file of a document whose
latest version is in one is shown read-only (0444).

The API tells no steady states in a way a client can read without lifecycle metadata
(the local vault serves none), so the rule is by name: a ``status__v`` whose label
(or API name without its ``__v``/``__c`` suffix) is one of ``STEADY_STATES``,
compared without case. The demo's General Lifecycle (Draft, In Review, Approved) has
one: Approved. A version's state changes only through the vault (an action, a field
update, another client), and the index poll brings the new status, so the mode
follows within one poll, and at once after an action started through this mount.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["STEADY_STATES", "is_steady"]

#: state names (lower case) that are steady: their versions are no longer edited
STEADY_STATES = frozenset({"approved", "effective", "final"})

_SUFFIX = re.compile(r"__(v|c|vs|sys)$")


def is_steady(record: dict[str, Any]) -> bool:
    """Whether the record's version is in a steady state."""
    status = record.get("status__v")
    if not isinstance(status, str):
        return False
    return _SUFFIX.sub("", status.strip()).replace("_", " ").lower() in STEADY_STATES
