"""An HTTP proxy that fails a seeded share of the requests it forwards, for fault tests.

``FaultProxy(upstream_port, seed=..., share=...)`` listens on 127.0.0.1 and forwards
each request to the vault on ``upstream_port``, one request per connection (it answers
with ``Connection: close``). While ``active``, a share of the requests meets one of
these faults, drawn from a ``random.Random(seed)`` so a run can be repeated:

``503``             answered 503 by the proxy; the vault never sees the request
``reset_before``    the connection is reset before anything is forwarded
``reset_after``     forwarded and answered by the vault, then reset without the answer
``truncated``       forwarded; the answer is cut off halfway through its body

``counts`` says how often each happened (and ``ok``), so a test can assert its seed
hit every kind. ``hold`` stops the next request that matches a method and path part,
before it reaches the vault or after the vault answered, until ``Hold.release``; the
held request is then dropped (a reset), as a daemon killed meanwhile would never see
its answer. It runs in threads of its own, and ``stop`` ends them.
"""

from __future__ import annotations

import contextlib
import random
import socket
import struct
import threading
from collections import Counter
from collections.abc import Sequence

__all__ = ["FAULTS", "FaultProxy", "Hold"]

FAULTS = ("503", "reset_before", "reset_after", "truncated")
_HEAD_LIMIT = 1 << 16


class Hold:
    """One request to stop: ``METHOD path-part``, before or after the vault saw it."""

    def __init__(self, method: str, path_part: str, *, after_vault: bool) -> None:
        self.method, self.path_part, self.after_vault = method, path_part, after_vault
        #: set once a matching request is being held
        self.holding = threading.Event()
        self._released = threading.Event()

    def matches(self, request: bytes) -> bool:
        line = request.split(b"\r\n", 1)[0].decode("ascii", "replace")
        method, _, rest = line.partition(" ")
        return method == self.method and self.path_part in rest and not self.holding.is_set()

    def wait(self) -> None:
        self.holding.set()
        self._released.wait(timeout=300)

    def release(self) -> None:
        self._released.set()


class FaultProxy:
    def __init__(
        self,
        upstream_port: int,
        *,
        seed: int,
        share: float = 0.2,
        faults: Sequence[str] = FAULTS,
        methods: Sequence[str] = ("GET", "POST", "PUT", "DELETE"),
    ) -> None:
        self.upstream = ("127.0.0.1", upstream_port)
        self.share = share
        self.faults = tuple(faults)
        self.methods = tuple(methods)
        self.active = False
        self.counts: Counter[str] = Counter()
        self._holds: list[Hold] = []
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._server.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, name="fault-proxy", daemon=True)
        self._stopping = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping = True
        # close() alone does not wake a thread blocked in accept(): shutdown() does.
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        self._thread.join(timeout=10)

    def hold(self, method: str, path_part: str, *, after_vault: bool = False) -> Hold:
        held = Hold(method, path_part, after_vault=after_vault)
        with self._lock:
            self._holds.append(held)
        return held

    def _held(self, request: bytes) -> Hold | None:
        with self._lock:
            for held in self._holds:
                if held.matches(request):
                    self._holds.remove(held)
                    return held
        return None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- serving ---------------------------------------------------------------------

    def _serve(self) -> None:
        while not self._stopping:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _pick(self, method: str) -> str:
        with self._lock:
            fault = "ok"
            if self.active and method in self.methods and self._rng.random() < self.share:
                fault = self._rng.choice(self.faults)
            self.counts[fault] += 1
            return fault

    def _handle(self, client: socket.socket) -> None:
        with client:
            try:
                request = _read_request(client)
            except (OSError, ValueError):
                return
            if request is None:
                return
            held = self._held(request)
            if held is not None and not held.after_vault:
                held.wait()
                _reset(client)
                return
            if held is not None:
                try:
                    _forward(self.upstream, request)
                finally:
                    held.wait()
                    _reset(client)
                return
            method = request.split(b" ", 1)[0].decode("ascii", "replace")
            fault = self._pick(method)
            if fault == "503":
                client.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                    b"Connection: close\r\n\r\n"
                )
                return
            if fault == "reset_before":
                _reset(client)
                return
            try:
                response = _forward(self.upstream, request)
            except OSError:
                _reset(client)
                return
            if fault == "reset_after":
                _reset(client)
                return
            if fault == "truncated":
                head, _, body = response.partition(b"\r\n\r\n")
                client.sendall(head + b"\r\n\r\n" + body[: len(body) // 2])
                _reset(client)
                return
            client.sendall(response)


def _reset(sock: socket.socket) -> None:
    """Close with RST (SO_LINGER 0), as a dropped connection looks to the client."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def _read_message(sock: socket.socket) -> tuple[list[bytes], bytes] | None:
    """One whole HTTP message: its head's lines less any ``Connection`` header, and its
    body as sent (Content-Length or chunked). None when the peer closed first."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
        if len(data) > _HEAD_LIMIT and b"\r\n\r\n" not in data:
            raise ValueError("message head too long")
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    headers = {}
    kept = [lines[0]]
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
        if name.strip().lower() != b"connection":
            kept.append(line)
    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        while not body.endswith(b"0\r\n\r\n"):
            chunk = sock.recv(65536)
            if not chunk:
                raise ValueError("body cut short")
            body += chunk
    else:
        length = int(headers.get(b"content-length", b"0"))
        while len(body) < length:
            chunk = sock.recv(min(1 << 20, length - len(body)))
            if not chunk:
                raise ValueError("body cut short")
            body += chunk
    return kept, body


def _closing(lines: list[bytes], body: bytes) -> bytes:
    return b"\r\n".join([*lines, b"Connection: close"]) + b"\r\n\r\n" + body


def _read_request(sock: socket.socket) -> bytes | None:
    """One whole request, asking the vault for ``Connection: close``."""
    message = _read_message(sock)
    return None if message is None else _closing(*message)


def _forward(upstream: tuple[str, int], request: bytes) -> bytes:
    """Send ``request`` to the vault and read its whole answer."""
    with socket.create_connection(upstream, timeout=120) as sock:
        sock.sendall(request)
        message = _read_message(sock)
    if message is None:
        raise ConnectionResetError("the vault closed without an answer")
    return _closing(*message)
