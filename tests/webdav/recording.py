"""A relay between a WebDAV client and the front that records what the client sent.

A test points the client at the relay's port instead of the front's: every byte goes
through unchanged, both ways, and what the client sent on each connection is kept,
then read back as HTTP requests (h11, Hypercorn's own parser): the method, the path,
the headers, the body. So a test sees exactly what a real client asked (which
methods, which lock tokens) and the exact bytes it saved, without trusting the front
to say so.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import h11

__all__ = ["Recorded", "RecordingRelay"]


@dataclass
class Recorded:
    """One request a client sent."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes = field(repr=False)


class RecordingRelay:
    """Listens on a free port of 127.0.0.1 and relays each connection to ``port``."""

    def __init__(self, port: int) -> None:
        self.target = port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._sent: list[bytearray] = []
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._stopped = False

    def __enter__(self) -> RecordingRelay:
        self._start(self._accept)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _start(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # stopped
            with self._lock:
                if self._stopped:
                    client.close()
                    return
                server = socket.create_connection(("127.0.0.1", self.target))
                self._sockets += [client, server]
                sent = bytearray()
                self._sent.append(sent)
            self._start(self._pipe, client, server, sent)
            self._start(self._pipe, server, client, None)

    def _pipe(self, source: socket.socket, sink: socket.socket, kept: bytearray | None) -> None:
        try:
            while data := source.recv(1 << 16):
                if kept is not None:
                    with self._lock:
                        kept += data
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            sockets, self._sockets = self._sockets, []
        self._listener.close()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.close()
        for thread in self._threads:
            thread.join(timeout=10)

    def requests(self) -> list[Recorded]:
        """Every request the client sent so far, connection after connection."""
        with self._lock:
            streams = [bytes(sent) for sent in self._sent]
        return [request for stream in streams for request in _parse(stream)]


def _parse(stream: bytes) -> Iterator[Recorded]:
    """The requests of one connection's bytes: an h11 server that answers each with
    an empty 204 (never sent) to read the next."""
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(stream)
    conn.receive_data(b"")
    request: h11.Request | None = None
    body = bytearray()
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError:
            return  # a connection cut in the middle of a request
        if event is h11.NEED_DATA or event is h11.PAUSED or isinstance(event, h11.ConnectionClosed):
            return
        if isinstance(event, h11.Request):
            request, body = event, bytearray()
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage) and request is not None:
            yield Recorded(
                request.method.decode(),
                request.target.decode(),
                {k.decode().lower(): v.decode("latin-1") for k, v in request.headers},
                bytes(body),
            )
            conn.send(h11.Response(status_code=204, headers=[]))
            conn.send(h11.EndOfMessage())
            conn.start_next_cycle()
