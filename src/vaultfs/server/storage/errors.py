"""Domain errors of the local vault that ``vaultfs.errors`` has no class for yet.

``OPERATION_NOT_ALLOWED`` is the type the vault service uses when the state of a
record forbids the request (a document checked out by another user). Built through
``error_for_type`` so that, once ``vaultfs.errors`` gains the class, the same code
raises it.
"""

from __future__ import annotations

from vaultfs.errors import VaultError, error_for_type

__all__ = ["OPERATION_NOT_ALLOWED", "operation_not_allowed"]

OPERATION_NOT_ALLOWED = "OPERATION_NOT_ALLOWED"


def operation_not_allowed(message: str) -> VaultError:
    err = error_for_type(
        OPERATION_NOT_ALLOWED, message, [{"type": OPERATION_NOT_ALLOWED, "message": message}]
    )
    # 409 Conflict: the request is valid but the record's state forbids it now.
    err.http_status = 409
    return err
