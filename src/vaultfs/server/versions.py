"""API versions: the labels served, and the version each feature appeared in.

``API_VERSIONS`` runs from v2.0 up to ``CURRENT_RELEASE``, the newest version of the
real service (its last entry is the beta, as the spec's version list describes); a
versioned path with any other label is ``MALFORMED_URL``, except that a login accepts
any well-formed ``vN.M`` (clients log in at the newest version they know, then move to
the newest one ``GET /api/`` lists). The constants below are the
spec's "Introduction of features" table; routes are gated with
``routes.common.since(<constant>)`` and parameters with ``at_least(...)``.
"""

from __future__ import annotations

import re

__all__ = [
    "API_VERSIONS",
    "ATTACHMENTS",
    "BETA",
    "BINDER_FLAG",
    "BULK",
    "CREATE_DRAFT",
    "CRM_DELEGATION",
    "CROSSLINK",
    "CURRENT_RELEASE",
    "DELETED_DOCUMENTS",
    "DOMAIN_INFORMATION",
    "EVENTS",
    "FIND_COMMON",
    "LIFECYCLE_ACTIONS",
    "LIMITS",
    "LOCK_ON_DOWNLOAD",
    "RECLASSIFY",
    "RELATIONSHIPS",
    "REMAINING_CALL_HEADERS",
    "SAML",
    "SEARCH_SCOPE",
    "STEADY_STATE",
    "SUPPRESS_RENDITION",
    "THUMBNAILS",
    "VERSION_ID",
    "VERSION_RENDITIONS",
    "at_least",
    "parse",
    "supported",
    "well_formed",
]

#: The newest release of the real service (three a year: vNN.1 to vNN.3). Clients
#: such as veevatools log in at it; raise it when the service ships a new one.
CURRENT_RELEASE = "v26.3"

RELATIONSHIPS = "v3.0"
SEARCH_SCOPE = "v4.0"
CRM_DELEGATION = "v5.0"
BINDER_FLAG = "v5.0"
EVENTS = "v6.0"
LIFECYCLE_ACTIONS = "v6.0"
THUMBNAILS = "v6.0"
LOCK_ON_DOWNLOAD = "v6.0"
STEADY_STATE = "v6.0"
CREATE_DRAFT = "v7.0"
VERSION_RENDITIONS = "v7.0"
DOMAIN_INFORMATION = "v7.0"
SUPPRESS_RENDITION = "v8.0"
RECLASSIFY = "v8.0"
FIND_COMMON = "v9.0"
BULK = "v9.0"
CROSSLINK = "v10.0"
SAML = "v12.0"
# The spec's row reads "v12 / v13": attachments and bulk rendition add in v12,
# the deleted-documents list in v13.
ATTACHMENTS = "v12.0"
DELETED_DOCUMENTS = "v13.0"
# "v14 / v15": the limits request and remaining-call headers in v14, version_id in v15.
LIMITS = "v14.0"
REMAINING_CALL_HEADERS = "v14.0"
VERSION_ID = "v15.0"

# ASCII digits only, and a bounded length: a label is never a big number.
_LABEL = re.compile(r"v([0-9]{1,4})\.([0-9]{1,4})")


def parse(label: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a label such as ``v14.0``; None when malformed."""
    match = _LABEL.fullmatch(label)
    return (int(match.group(1)), int(match.group(2))) if match else None


def well_formed(label: str) -> bool:
    """Whether ``label`` looks like an API version (``vN.M``), served or not."""
    return parse(label) is not None


def _labels() -> list[str]:
    """Every label from v2.0 up to the current release (three or four a year)."""
    last = parse(CURRENT_RELEASE)
    assert last is not None
    labels = []
    for major in range(2, last[0] + 1):
        for minor in range(0, 4 if major >= 15 else 2):
            if (major, minor) <= last:
                labels.append(f"v{major}.{minor}")
    return labels


API_VERSIONS: tuple[str, ...] = tuple(_labels())
#: The last listed version is the beta (the spec: "The last listed version may be the
#: Beta version"); the one before it is the newest generally available version.
BETA = API_VERSIONS[-1]
_SUPPORTED = frozenset(API_VERSIONS)


def supported(label: str) -> bool:
    return label in _SUPPORTED


def at_least(label: str, since: str) -> bool:
    """Whether API version ``label`` has a feature introduced in ``since``."""
    have, need = parse(label), parse(since)
    return have is not None and need is not None and have >= need
