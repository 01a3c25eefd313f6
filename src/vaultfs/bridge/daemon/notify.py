"""The systemd notification protocol (``sd_notify``), for ``Type=notify`` units.

Owns telling the service manager how the mount is doing: ``READY=1`` once the mount
answers, ``STATUS=...`` lines, ``STOPPING=1`` while pending uploads are flushed before
the unmount. The protocol is one datagram of ``KEY=VALUE`` lines to the unix socket
named by ``$NOTIFY_SOCKET`` (a leading ``@`` names an abstract socket). Outside systemd
there is no such variable and every call does nothing.
"""

from __future__ import annotations

import logging
import os
import socket

__all__ = ["notify"]

log = logging.getLogger(__name__)


def notify(*assignments: str) -> bool:
    """Send ``assignments`` (e.g. ``"READY=1"``) to the service manager, if there is
    one; True when they were sent. Failures are logged, never raised: a service
    manager that went away must not take the mount down with it."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address or not assignments:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    message = "\n".join(assignments).encode()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall(message)
    except OSError as exc:
        log.warning("cannot notify the service manager at %s: %s", address, exc)
        return False
    return True
