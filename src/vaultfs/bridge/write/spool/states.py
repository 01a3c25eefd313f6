"""The states of a save, and the one table of the moves between them.

Owns the state machines of the spool's jobs, one shape for all (httpx's
``ClientState`` is the pattern: an ``Enum`` whose members say what each state means):

- ``EntryState``: a checked-out document (``entry``, ``store``), moved by the spool's
  check-out and check-in;
- ``UploadState``: a file written into renditions/ or attachments/ (``uploads``);
- ``CreateState``: a new document's create (``creates``).

Each has a transition table (``ENTRY_MOVES``, ``UPLOAD_MOVES``, ``CREATE_MOVES``) and
every change of a
state goes through ``Machine.move``, which refuses (logs and raises
``IllegalTransition``) a move the table does not have. A state's value is what the
records on disk hold: the same strings earlier versions wrote, so their records load.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Hashable, Mapping
from typing import Generic, Protocol, TypeVar

__all__ = [
    "CREATE_MOVES",
    "ENTRY_MOVES",
    "UPLOAD_MOVES",
    "CreateState",
    "EntryState",
    "IllegalTransition",
    "Machine",
    "State",
    "UploadState",
]

log = logging.getLogger(__name__)


class EntryState(enum.StrEnum):
    """Where the save of a checked-out document stands; each is on disk before it
    matters (the value is the record's ``state``)."""

    #: open for writing; the worker leaves it alone
    EDITING = "editing"
    #: closed; waiting to be uploaded (again)
    PENDING = "pending"
    #: an upload was sent and its outcome is unknown: before sending it again the
    #: vault's checksum is compared with the content's and with that of what was sent
    UPLOADING = "uploading"
    #: the draft is in the vault; releasing the lock is left to do
    UNLOCKING = "unlocking"

    @property
    def message(self) -> str:
        """What the state means, for a refused move and for readers of the table."""
        return _ENTRY_MESSAGES[self]


_ENTRY_MESSAGES = {
    EntryState.EDITING: "open for writing",
    EntryState.PENDING: "closed, waiting to be uploaded",
    EntryState.UPLOADING: "an upload was sent, its outcome unknown",
    EntryState.UNLOCKING: "the draft is in the vault, the lock not yet released",
}


class UploadState(enum.StrEnum):
    """Where a rendition's or an attachment's upload stands (never ``editing``: an
    upload entry is made when the file is closed, whole)."""

    #: nothing sent, or the vault said it did nothing
    PENDING = "pending"
    #: sent, outcome unknown (sending again is harmless)
    UPLOADING = "uploading"

    @property
    def message(self) -> str:
        return _UPLOAD_MESSAGES[self]


_UPLOAD_MESSAGES = {
    UploadState.PENDING: "waiting to be sent",
    UploadState.UPLOADING: "sent, its outcome unknown",
}


class CreateState(enum.StrEnum):
    """Where a new document's create stands (in memory: a record found at a start is
    ``sent``, as it may have been)."""

    #: not sent, or its marker was looked for and not found
    PENDING = "pending"
    #: sent, the answer unknown: its marker is looked for before it is sent again
    SENT = "sent"

    @property
    def message(self) -> str:
        return _CREATE_MESSAGES[self]


_CREATE_MESSAGES = {
    CreateState.PENDING: "waiting to be sent",
    CreateState.SENT: "sent, whether the vault made it unknown",
}


class State(Hashable, Protocol):
    """A member of a state ``Enum``: its value (on disk) and what it means."""

    @property
    def value(self) -> str: ...

    @property
    def message(self) -> str: ...


S = TypeVar("S", bound=State)


class IllegalTransition(RuntimeError):
    """A move its state machine's table does not have: a bug in the spool (or the
    lease, ``write.lease``, whose table is a ``Machine`` too), never a failure of the
    vault or the disk."""


class Machine(Generic[S]):
    """A state machine: its start state and the moves its table allows."""

    def __init__(self, name: str, start: S, table: Mapping[S, frozenset[S]]) -> None:
        self.name = name
        self.start: S = start
        self.table: Mapping[S, frozenset[S]] = table

    def allows(self, old: S, new: S) -> bool:
        return new in self.table.get(old, frozenset())

    def move(self, old: S, new: S, *, what: str) -> S:
        """``new`` when the table allows the move from ``old``; else log and raise
        ``IllegalTransition`` (``what`` names the entry for the message)."""
        if not self.allows(old, new):
            message = (
                f"{self.name} {what}: no move from {old.value} ({old.message}) "
                f"to {new.value} ({new.message})"
            )
            log.error("spool: %s", message)
            raise IllegalTransition(message)
        return new


E = EntryState
#: The moves of a save. A reopen (``begin``) goes back to editing from anywhere: the
#: lock is still ours. Uploading again is a retry; the vault saying it did nothing
#: makes an upload pending again. Leaving the spool (checked in, or lost+found) is no
#: state: the entry is gone.
ENTRY_MOVES: Machine[EntryState] = Machine(
    "entry",
    E.EDITING,
    {
        E.EDITING: frozenset({E.EDITING, E.PENDING}),
        E.PENDING: frozenset({E.EDITING, E.UPLOADING, E.UNLOCKING}),
        E.UPLOADING: frozenset({E.EDITING, E.PENDING, E.UPLOADING, E.UNLOCKING}),
        E.UNLOCKING: frozenset({E.EDITING}),
    },
)

U = UploadState
#: The moves of an upload: every try is sent as uploading, and one the vault did not
#: process goes back to pending.
UPLOAD_MOVES: Machine[UploadState] = Machine(
    "upload",
    U.PENDING,
    {
        U.PENDING: frozenset({U.UPLOADING}),
        U.UPLOADING: frozenset({U.PENDING, U.UPLOADING}),
    },
)

C = CreateState
#: The moves of a create: sent; looked for and not found, pending again. Made (the
#: vault answered, or its marker was found) or refused for good is no state: the job
#: is gone.
CREATE_MOVES: Machine[CreateState] = Machine(
    "create",
    C.PENDING,
    {
        C.PENDING: frozenset({C.SENT}),
        C.SENT: frozenset({C.PENDING}),
    },
)
