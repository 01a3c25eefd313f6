"""The one error hierarchy of vaultfs, and the one errno table.

Every layer raises these and nothing else crosses a layer boundary:

* the server's storage raises the API error classes (``InvalidDocument``, ...) and the
  server's error table turns them into the response envelope;
* the client turns a ``FAILURE``/``EXCEPTION`` envelope back into the same classes
  (``error_for_type``) and transport trouble into ``VaultUnavailable``;
* the bridge raises the bridge-only classes below and the FUSE layer turns any of them
  into an errno through ``errno_for`` (the only errno table).

Each API error class carries the wire name of its type in ``type``.
"""

from __future__ import annotations

import errno as _errno

__all__ = [
    "AccessDenied",
    "AlreadyExists",
    "AlreadyInUse",
    "ApiLimitExceeded",
    "BadHandle",
    "BridgeError",
    "CacheTooSmall",
    "CheckInConflict",
    "CrossDevice",
    "DirectoryNotEmpty",
    "InsufficientAccess",
    "InvalidData",
    "InvalidDocument",
    "InvalidName",
    "InvalidSessionId",
    "IsADirectory",
    "LockedByOther",
    "MalformedUrl",
    "MethodNotSupported",
    "NameTooLong",
    "NoSuchAttribute",
    "NotADirectory",
    "NotEditable",
    "NotFound",
    "OperationNotAllowed",
    "OperationNotPermitted",
    "ParameterRequired",
    "ReadOnly",
    "ServerException",
    "SignInExpired",
    "Unsupported",
    "UserLockedOut",
    "UsernameOrPasswordIncorrect",
    "VaultError",
    "VaultOffline",
    "VaultUnavailable",
    "WalkShareSpent",
    "errno_for",
    "error_for_type",
]


class VaultError(Exception):
    """Base of every vaultfs error. ``type`` is the API error type it stands for."""

    type: str = "UNEXPECTED_ERROR"
    #: HTTP status the local vault answers with (the spec does not state codes; see
    #: docs/server.md for the choice).
    http_status: int = 400

    def __init__(self, message: str = "", *, errors: list[dict[str, str]] | None = None):
        super().__init__(message or self.type)
        self.message = message or self.type
        #: all errors of the envelope, when a response carried several
        self.errors = errors or [{"type": self.type, "message": self.message}]


# --- API error types (the spec's table) -------------------------------------------


class ApiLimitExceeded(VaultError):
    type = "API_LIMIT_EXCEEDED"
    http_status = 429

    def __init__(self, message: str = "", *, retry_after: float | None = None, **kw):
        super().__init__(message, **kw)
        #: seconds until the window allows calls again, when known
        self.retry_after = retry_after


class UsernameOrPasswordIncorrect(VaultError):
    type = "USERNAME_OR_PASSWORD_INCORRECT"
    http_status = 401


class SignInExpired(UsernameOrPasswordIncorrect):
    """The authorization server refused the stored single sign-on (its refresh token was
    revoked or has expired): only signing in again (``vaultfs login``) cures it. Not a
    wire type of its own: the vault would have said USERNAME_OR_PASSWORD_INCORRECT."""


class InvalidSessionId(VaultError):
    type = "INVALID_SESSION_ID"
    http_status = 401


class UserLockedOut(VaultError):
    type = "USER_LOCKED_OUT"
    http_status = 403


class InsufficientAccess(VaultError):
    type = "INSUFFICIENT_ACCESS"
    http_status = 403


class ParameterRequired(VaultError):
    type = "PARAMETER_REQUIRED"

    @classmethod
    def naming(cls, names: list[str]) -> ParameterRequired:
        """One error that names every missing parameter, with one entry per name."""
        return cls(
            "Missing required parameter(s): " + ", ".join(f"[{n}]" for n in names),
            errors=[
                {"type": cls.type, "message": f"Missing required parameter [{n}]"} for n in names
            ],
        )


class InvalidData(VaultError):
    type = "INVALID_DATA"


class InvalidDocument(VaultError):
    type = "INVALID_DOCUMENT"
    http_status = 404


class MalformedUrl(VaultError):
    type = "MALFORMED_URL"
    http_status = 404


class MethodNotSupported(VaultError):
    type = "METHOD_NOT_SUPPORTED"
    http_status = 405


class OperationNotAllowed(VaultError):
    """The record's state forbids the request now (e.g. checked out by another user)."""

    type = "OPERATION_NOT_ALLOWED"
    http_status = 409


class ServerException(VaultError):
    """``EXCEPTION`` status: a system-level error on the server."""

    type = "EXCEPTION"
    http_status = 500


class VaultUnavailable(VaultError):
    """The vault could not be reached or answered garbage (connection, timeout, 5xx)."""

    type = "VAULT_UNAVAILABLE"
    http_status = 503


class VaultOffline(VaultUnavailable):
    """The vault is known to be unreachable now, so the call was not even sent: the
    client works offline (``client._reach``) until a probe reaches the vault again."""

    type = "VAULT_OFFLINE"


_API_ERRORS: dict[str, type[VaultError]] = {
    cls.type: cls
    for cls in (
        ApiLimitExceeded,
        UsernameOrPasswordIncorrect,
        InvalidSessionId,
        UserLockedOut,
        InsufficientAccess,
        ParameterRequired,
        InvalidData,
        InvalidDocument,
        MalformedUrl,
        MethodNotSupported,
        OperationNotAllowed,
        ServerException,
    )
}


def error_for_type(
    type_: str, message: str, errors: list[dict[str, str]] | None = None
) -> VaultError:
    """Build the exception for an API error type (unknown types give a plain VaultError)."""
    cls = _API_ERRORS.get(type_)
    if cls is None:
        err = VaultError(message, errors=errors)
        err.type = type_
        if errors is None:
            err.errors = [{"type": type_, "message": err.message}]
        return err
    return cls(message, errors=errors)


# --- bridge-only errors -----------------------------------------------------------


class BridgeError(VaultError):
    """An error the bridge raises itself (no API call said so)."""


class LockedByOther(BridgeError):
    """The document is checked out by another user."""


class CheckInConflict(BridgeError):
    """A check-in that would replace what this edit did not start from: the check-out
    was undone or taken over, or someone else checked in a version meanwhile. The
    content goes to lost+found; nothing in the vault is replaced."""

    type = "CHECK_IN_CONFLICT"


class NotEditable(BridgeError):
    """The field or file cannot be changed (system-managed, read-only tree)."""


class OperationNotPermitted(BridgeError):
    """Refused by policy of the mount (deletion disabled, a name the vault owns)."""


class ReadOnly(OperationNotPermitted):
    """The mount is read-only, or has no write-back spool to write through."""


class NotFound(BridgeError):
    """No such node (left the tree, never existed, an inode the kernel forgot)."""


class AccessDenied(BridgeError):
    """This node cannot be opened or made so (a rendition for writing, a file at the root)."""


class BadHandle(BridgeError):
    """The handle is not open, or not open for what was asked (a write to a reader)."""


class IsADirectory(BridgeError):
    """A file operation on a directory."""


class NotADirectory(BridgeError):
    """A directory operation on a file."""


class DirectoryNotEmpty(BridgeError):
    """rmdir of a directory that still has entries."""


class AlreadyExists(BridgeError):
    """The name is taken (rename with RENAME_NOREPLACE)."""


class CrossDevice(BridgeError):
    """A rename that would move a file out of the directories it may live in."""


class Unsupported(BridgeError):
    """Not an operation of this file system (RENAME_EXCHANGE, an xattr that is no field)."""


class NoSuchAttribute(BridgeError):
    """An extended attribute the node does not have."""


class AlreadyInUse(BridgeError):
    """The mount point or cache directory belongs to another mount."""


class NameTooLong(BridgeError):
    """A new name longer than the mount or the vault takes (255 bytes; a document
    name longer than its field's maxLength)."""


class InvalidName(BridgeError):
    """A new name the vault cannot take (bytes that are not UTF-8)."""


class WalkShareSpent(BridgeError):
    """A listing only a walk needs (a document's ``versions/``, ``renditions/``,
    ``attachments/``, ``relationships/`` nobody read) would spend more than the
    mount's share for walks of the vault's API budget (``bridge.tree.walks``): refused,
    never answered as empty. The share refills with time; what a person asks for
    directly (open, read, save, the vault's search) is never refused."""


class CacheTooSmall(BridgeError):
    """Pinning (``vaultfs pin``, ``bridge.content.pins``) would keep more content for
    offline than the content cache may hold (its bound, ``cache_size``): refused, and
    nothing is pinned. The message gives the numbers."""


# --- the errno table --------------------------------------------------------------

#: By class; a class not in it answers as its nearest base class that is (the most
#: specific match wins, whatever the order: httpx's ``map_httpcore_exceptions`` too).
_ERRNO: dict[type[VaultError], int] = {
    InvalidDocument: _errno.ENOENT,
    MalformedUrl: _errno.ENOENT,
    InsufficientAccess: _errno.EACCES,
    UsernameOrPasswordIncorrect: _errno.EACCES,
    UserLockedOut: _errno.EACCES,
    LockedByOther: _errno.EBUSY,
    CheckInConflict: _errno.EBUSY,
    AlreadyInUse: _errno.EBUSY,
    OperationNotAllowed: _errno.EBUSY,
    NotEditable: _errno.EPERM,
    ReadOnly: _errno.EROFS,
    OperationNotPermitted: _errno.EPERM,
    NotFound: _errno.ENOENT,
    AccessDenied: _errno.EACCES,
    BadHandle: _errno.EBADF,
    IsADirectory: _errno.EISDIR,
    NotADirectory: _errno.ENOTDIR,
    DirectoryNotEmpty: _errno.ENOTEMPTY,
    AlreadyExists: _errno.EEXIST,
    CrossDevice: _errno.EXDEV,
    Unsupported: _errno.ENOTSUP,
    NoSuchAttribute: _errno.ENODATA,
    NameTooLong: _errno.ENAMETOOLONG,
    InvalidName: _errno.EINVAL,
    # "Disk quota exceeded": the mount's quota of API calls for walks; a program
    # reports it and goes on (find, GNOME Files' search, rsync skip the folder).
    WalkShareSpent: _errno.EDQUOT,
    # "No space left on device": the content cache is the device whose size the mount
    # reports (statfs), and pinned content must fit in it whole.
    CacheTooSmall: _errno.ENOSPC,
    ParameterRequired: _errno.EINVAL,
    InvalidData: _errno.EINVAL,
    MethodNotSupported: _errno.EINVAL,
    # "No route to host": the vault cannot be reached now and what was asked needs it
    # (content that is not kept); answered at once, never after a wait.
    VaultOffline: _errno.EHOSTUNREACH,
    # Transport trouble, rate limits that outlasted the retries, expired sessions that
    # could not be renewed, and server faults: the operation could not be done now.
}


def errno_for(exc: BaseException) -> int:
    """The errno a filesystem call reports for ``exc``: that of its class, or of its
    nearest base class in the table (EIO when nothing fits better)."""
    for cls in type(exc).__mro__:
        number = _ERRNO.get(cls)
        if number is not None:
            return number
    if isinstance(exc, OSError) and exc.errno:
        return exc.errno
    return _errno.EIO
