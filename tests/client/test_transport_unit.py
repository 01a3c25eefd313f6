"""Unit tests: the default transport reads the socket in wide pieces."""

from __future__ import annotations

import httpcore
import httpx

from vaultfs.client._transport import READ_SIZE, _WideReads, _WideStream, wide_read_transport


def test_default_transport_uses_the_wide_read_backend() -> None:
    # Fails (instead of silently slowing downloads) should httpx rename what it wraps.
    transport = wide_read_transport(verify=True, limits=httpx.Limits(max_connections=4))
    assert isinstance(transport._pool._network_backend, _WideReads)  # type: ignore[attr-defined]


async def test_reads_ask_for_at_least_read_size() -> None:
    class Recording(httpcore.AsyncNetworkStream):
        asked: list[int] = []

        async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
            self.asked.append(max_bytes)
            return b""

    inner = Recording()
    stream = _WideStream(inner)
    await stream.read(65_536)
    await stream.read(4 * READ_SIZE)
    assert inner.asked == [READ_SIZE, 4 * READ_SIZE]
