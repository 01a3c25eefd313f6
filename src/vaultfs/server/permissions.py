"""What each role may do. A later version maps groups and security profiles here.

Roles: ``admin`` (everything), ``editor`` (view, create, edit, lock) and ``viewer``
(view only). A request the caller may not perform is ``INSUFFICIENT_ACCESS``.
"""

from __future__ import annotations

from enum import Enum

from vaultfs.errors import InsufficientAccess

from .storage.users import SessionUser

__all__ = ["Permission", "require"]


class Permission(Enum):
    VIEW = "view"
    CREATE = "create"
    EDIT = "edit"
    LOCK = "lock"
    DELETE = "delete"


_ROLES: dict[str, frozenset[Permission]] = {
    "admin": frozenset(Permission),
    "editor": frozenset({Permission.VIEW, Permission.CREATE, Permission.EDIT, Permission.LOCK}),
    "viewer": frozenset({Permission.VIEW}),
}


def require(caller: SessionUser, permission: Permission) -> None:
    if permission not in _ROLES.get(caller.user.role, frozenset()):
        raise InsufficientAccess(
            f"User [{caller.user.username}] does not have permission to {permission.value} "
            "documents"
        )
