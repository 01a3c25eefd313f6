"""What each vault role may do, and the request's acting user for document access.

Vault roles: ``admin`` (everything), ``editor`` (view, create, edit, lock, log events)
and ``viewer`` (view only). A request the caller may not perform is
``INSUFFICIENT_ACCESS``. Deleting documents and versions, migration-mode bulk
operations and managing groups are admin-only.

Document roles (``owner__v``, ``viewer__v``, ``editor__v``, ...) narrow this per
document; storage/access.py applies them. ``require`` records the checked caller and
whether the request changes documents as the request's *acting* user, so every
storage lookup of a document (files, renditions, attachments, locks as well) applies
the document's roles without each storage function taking the caller.
"""

from __future__ import annotations

from enum import Enum

from vaultfs.errors import InsufficientAccess

from .storage import access
from .storage.users import SessionUser

__all__ = ["Permission", "allowed", "require"]


class Permission(Enum):
    VIEW = "view"
    CREATE = "create"
    EDIT = "edit"
    LOCK = "lock"
    DELETE = "delete"
    #: log document events (the "Events API" permission)
    LOG_EVENTS = "log events for"
    #: bulk operations in migration mode (the "Document Migration" permission)
    MIGRATE = "migrate"
    #: create, change and delete groups
    MANAGE_GROUPS = "manage groups of"


_ROLES: dict[str, frozenset[Permission]] = {
    "admin": frozenset(Permission),
    "editor": frozenset(
        {
            Permission.VIEW,
            Permission.CREATE,
            Permission.EDIT,
            Permission.LOCK,
            Permission.LOG_EVENTS,
        }
    ),
    "viewer": frozenset({Permission.VIEW}),
}

#: Permissions that change an existing document (document roles must allow editing).
_CHANGES = frozenset({Permission.EDIT, Permission.LOCK, Permission.DELETE, Permission.MIGRATE})


def allowed(caller: SessionUser, permission: Permission) -> bool:
    return permission in _ROLES.get(caller.user.role, frozenset())


def require(caller: SessionUser, permission: Permission) -> None:
    """Refuse what the caller's vault role does not allow; record them as acting."""
    if not allowed(caller, permission):
        raise InsufficientAccess(
            f"User [{caller.user.username}] does not have permission to {permission.value} "
            "documents"
        )
    access.act_as(caller, changes=permission in _CHANGES)
