"""Desktop notifications: what a user with no terminal open must learn of the mount.

Owns turning the status document (``fs.status``) into freedesktop notifications on the
user's session bus (``org.freedesktop.Notifications``, through jeepney, which speaks
D-Bus from trio): the vault gone offline and back, a save that went to lost+found, a
new document waiting for fields, a save or upload that keeps failing, a sign-in the
vault or the identity provider refused, a delete refused because the mount does not
allow deleting, a program stopped from walking the whole vault (``tree.walks``). One
notification per file and kind of event while it lasts (a thing that goes and comes
back is told again), at most ``PER_MINUTE`` a minute (the rest wait and go as one
summary), each naming the file and what to do. Nothing without a session bus
(a system mount, CI) or with ``-o notify=off``.

The status is read every few seconds rather than each part calling in: the status
already says all of it, names each file by its path in the mount, and costs no call.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import trio

__all__ = ["Notice", "Notifier", "notices", "run_notifications", "session_bus_address"]

log = logging.getLogger(__name__)

#: notifications sent in any minute at most; more wait and go as one summary
PER_MINUTE = 3
#: how often the status is looked at (seconds)
INTERVAL = 5.0
#: a save or upload is told as failing after this many failed tries, this long after
#: it was made (a short outage the retries ride out is not worth a notification)
FAILING_ATTEMPTS = 3
FAILING_SECONDS = 120.0

#: how long after the vault is back "Back online" is told (once) at most
BACK_SECONDS = 120.0

#: the requests that delete (a refusal of one names the mount option)
_DELETES = frozenset({"unlink", "rmdir"})
_APP = "vaultfs"
_ICON = "drive-harddisk"


@dataclass(frozen=True)
class Notice:
    """One thing to tell: ``key`` (kind of event, file) says when two are the same."""

    key: tuple[str, str]
    summary: str
    body: str


def _in_mount(status: dict[str, Any], path: object) -> str:
    """A path relative to the mount point as the user would type it."""
    mountpoint = str(status.get("mountpoint") or "")
    if not isinstance(path, str) or not path:
        return mountpoint or "the mount"
    return f"{mountpoint}/{path}" if mountpoint else path


def notices(status: dict[str, Any]) -> Iterator[Notice]:
    """What the status says a user must be told now, one per file and kind."""
    mountpoint = str(status.get("mountpoint") or "")
    if status.get("session_state") == "refused":
        yield Notice(
            ("sign-in", str(status.get("vault_url"))),
            "Vault sign-in refused",
            f"{status.get('user')} at {status.get('vault_url')}: "
            f"{status.get('session_error') or 'the sign-in was refused'}. "
            "Saves wait in the spool; sign in again (vaultfs login, or vaultfs "
            f"set-password), then vaultfs flush {mountpoint}.",
        )
    vault = status.get("vault") or {}
    pending = len(status.get("pending_uploads") or [])
    if vault.get("state") == "offline":
        yield Notice(
            ("offline", str(vault.get("since"))),
            "Working offline",
            f"The vault at {status.get('vault_url')} cannot be reached (since "
            f"{vault.get('since')}). Documents kept on this computer open as usual, and "
            f"saves wait here ({pending} now) until the vault is back.",
        )
    away = vault.get("last_away")
    if vault.get("state") == "online" and away and _recent(away.get("until"), BACK_SECONDS):
        yield Notice(
            ("back", str(away.get("until"))),
            "Back online",
            f"The vault at {status.get('vault_url')} answers again; "
            + (f"{pending} saves waiting go in now." if pending else "nothing was waiting."),
        )
    for lost in status.get("lost_and_found") or []:
        file = _in_mount(status, lost.get("saved_as") or lost.get("filename"))
        # An attachment (a file dropped into a document's folder too) has no file of
        # the user's to copy back over: it is kept, not in the vault.
        attachment = lost.get("target") == "attachment"
        yield Notice(
            ("lost", str(lost.get("file"))),
            "An attachment went to lost+found" if attachment else "A save went to lost+found",
            f"{file}: the vault did not take it ({lost.get('error')}). "
            f"The content is in {_in_mount(status, lost.get('mount_path'))}"
            + ("." if attachment else "; copy it back over the file to save it again."),
        )
    for waiting in status.get("pending_new_documents") or []:
        file = _in_mount(status, waiting.get("path") or waiting.get("file"))
        missing = ", ".join(str(f) for f in waiting.get("missing") or []) or "fields"
        first = (waiting.get("missing") or ["FIELD"])[0]
        yield Notice(
            ("waiting", file),
            "A new document waits for fields",
            f"{file} is not in the vault yet: it needs {missing}. "
            f"setfattr -n user.vault.{first} -v VALUE '{file}'",
        )
    for refusal in status.get("refusals") or []:
        if refusal.get("op") in _DELETES and "allow_delete" in str(refusal.get("error")):
            # One for a whole ``rm -r`` or a file manager's Delete of many files.
            yield Notice(
                ("refused", "delete"),
                "Deleting is off on this drive",
                f"{_in_mount(status, refusal.get('path'))} was not deleted: "
                "deleting through the drive deletes in the vault, where it cannot be "
                "undone, so it is off unless the drive is mounted with -o allow_delete "
                f"(vaultfs umount {mountpoint}, then vaultfs mount ... -o allow_delete).",
            )
    stopped = (status.get("walks") or {}).get("stopped")
    if stopped:
        # Once for a whole walk: each of its refusals keeps the same notice alive.
        yield Notice(
            ("walk", "stopped"),
            "A program is walking the whole vault",
            f"{stopped.get('program')} is walking the whole vault; vaultfs stopped it at "
            f"{stopped.get('calls')} calls to keep the vault's budget for everyone. "
            "Documents and their files are still there; to find documents, use the "
            f"vault's search: vaultfs search {mountpoint} WORDS, or {mountpoint}/.search/.",
        )
    for entry in status.get("pending_uploads") or []:
        attempts = int(entry.get("attempts") or 0)
        age = float(entry.get("age_seconds") or 0.0)
        if attempts < FAILING_ATTEMPTS or age < FAILING_SECONDS or not entry.get("last_error"):
            continue
        file = _in_mount(status, entry.get("path") or entry.get("filename"))
        yield Notice(
            ("failing", file),
            "A save keeps failing",
            f"{file} is safe in the local spool but the vault has not taken it "
            f"({attempts} tries: {entry.get('last_error')}). It is retried; "
            "vaultfs status says more.",
        )


def _recent(when: object, seconds: float) -> bool:
    """Whether ``when`` (an ISO 8601 time of the status) is less than ``seconds`` ago."""
    try:
        then = datetime.fromisoformat(str(when))
    except ValueError:
        return False
    return (datetime.now(UTC) - then).total_seconds() < seconds


class Notifier:
    """Tells each notice once while it lasts, within ``per_minute``."""

    def __init__(
        self,
        status: Callable[[], dict[str, Any]],
        send: Callable[[str, str], Awaitable[None]],
        *,
        per_minute: int = PER_MINUTE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._status = status
        self._send = send
        self._per_minute = per_minute
        self._clock = clock
        #: keys of what is told (or waiting to be told) and still true
        self._known: set[tuple[str, str]] = set()
        #: what is still to be told, oldest first
        self._queue: list[Notice] = []
        #: when the last notifications went
        self._sent: list[float] = []

    async def check(self) -> None:
        current = {n.key: n for n in notices(self._status())}
        # What is over is forgotten (told again if it comes back); what is new waits.
        self._known &= current.keys()
        self._queue = [n for n in self._queue if n.key in current]
        for key, notice in current.items():
            if key not in self._known:
                self._known.add(key)
                self._queue.append(notice)
        await self._flush()

    async def _flush(self) -> None:
        now = self._clock()
        self._sent = [t for t in self._sent if now - t < 60.0]
        room = self._per_minute - len(self._sent)
        if room <= 0 or not self._queue:
            return
        if len(self._queue) > room:
            # The last slot of the minute tells the rest at once.
            told, rest = self._queue[: room - 1], self._queue[room - 1 :]
            summary = Notice(
                ("summary", ""),
                f"{len(rest)} things on the vault drive need you",
                "; ".join(n.summary + ": " + n.body.split(":")[0] for n in rest[:5])
                + ". vaultfs status lists them all.",
            )
            self._queue = []
            for notice in [*told, summary]:
                await self._deliver(notice, now)
            return
        told, self._queue = self._queue, []
        for notice in told:
            await self._deliver(notice, now)

    async def _deliver(self, notice: Notice, now: float) -> None:
        self._sent.append(now)
        try:
            await self._send(notice.summary, notice.body)
        except (OSError, trio.TooSlowError, RuntimeError) as exc:
            log.warning("desktop notification not sent (%s): %s", exc, notice.summary)
        else:
            log.info("desktop notification: %s: %s", notice.summary, notice.body)


def session_bus_address() -> str | None:
    """The user's session bus, None when there is none (a system mount, CI)."""
    address = os.environ.get("DBUS_SESSION_BUS_ADDRESS")
    if address:
        return address
    path = Path(f"/run/user/{os.getuid()}/bus")
    return f"unix:path={path}" if path.exists() else None


async def run_notifications(
    status: Callable[[], dict[str, Any]],
    *,
    interval: float = INTERVAL,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Send the mount's notifications until cancelled; nothing without a session bus."""
    address = session_bus_address()
    if address is None:
        log.debug("no session bus: no desktop notifications")
        task_status.started()
        return
    # Imported here: only a mount with a session bus needs it.
    from jeepney import DBusAddress, new_method_call
    from jeepney.io.trio import open_dbus_router
    from jeepney.wrappers import DBusErrorResponse, unwrap_msg

    target = DBusAddress(
        "/org/freedesktop/Notifications",
        bus_name="org.freedesktop.Notifications",
        interface="org.freedesktop.Notifications",
    )
    async with AsyncExitStack() as stack:
        try:
            router = await stack.enter_async_context(open_dbus_router(address))
        except (OSError, ValueError, RuntimeError) as exc:
            log.info("session bus %s not reachable (%s): no desktop notifications", address, exc)
            task_status.started()
            return

        async def send(summary: str, body: str) -> None:
            message = new_method_call(
                target, "Notify", "susssasa{sv}i", (_APP, 0, _ICON, summary, body, [], {}, -1)
            )
            with trio.fail_after(10):
                reply = await router.send_and_get_reply(message)
            try:
                unwrap_msg(reply)
            except DBusErrorResponse as exc:  # no notification server on the bus
                raise RuntimeError(str(exc)) from None

        notifier = Notifier(status, send)
        task_status.started()
        log.info("desktop notifications on %s", address)
        while True:
            await notifier.check()
            await trio.sleep(interval)
