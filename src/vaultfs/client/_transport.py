"""The client's HTTP transport: httpx's own, reading the socket in wide pieces.

httpcore's HTTP/1.1 connections read at most 64 KiB per socket read; on a fast link
the per-read work (h11 parsing, buffer copies, a trio checkpoint) then caps a download
at a fraction of what the network gives (a third of curl's speed on localhost). The
network backend below (httpcore's documented extension point) lets each read take up
to ``READ_SIZE`` bytes, so the same work moves four times the data. Nothing else of
httpx's transport changes.
"""

from __future__ import annotations

import functools
import ssl
import typing

import httpcore
import httpx

__all__ = ["READ_SIZE", "tls_context", "wide_read_transport"]

#: Bytes one socket read may return.
READ_SIZE = 256 * 1024


@functools.cache
def tls_context(verify: bool | str) -> ssl.SSLContext:
    """The TLS settings of ``verify`` (True: the system's CAs; a path: that bundle),
    made once per process: each httpx client made its own, reading the CA bundle again
    (40-70 ms of CPU; a mount's start made two)."""
    return httpx.create_ssl_context(verify=verify, trust_env=False)


def wide_read_transport(*, verify: bool | str, limits: httpx.Limits) -> httpx.AsyncHTTPTransport:
    """An ``httpx.AsyncHTTPTransport`` whose connections read up to ``READ_SIZE`` at once."""
    transport = httpx.AsyncHTTPTransport(verify=tls_context(verify), limits=limits, trust_env=False)
    # httpx builds its httpcore pool without a backend parameter; swap the backend the
    # pool made. Should a later httpx rename it, reads just stay at httpcore's default.
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if isinstance(backend, httpcore.AsyncNetworkBackend):
        pool._network_backend = _WideReads(backend)  # type: ignore[union-attr]
    return transport


class _WideReads(httpcore.AsyncNetworkBackend):
    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's signature
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _WideStream(stream)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's signature
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_unix_socket(path, timeout, socket_options)
        return _WideStream(stream)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _WideStream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        return await self._inner.read(max(max_bytes, READ_SIZE), timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's signature
    ) -> httpcore.AsyncNetworkStream:
        return _WideStream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)
