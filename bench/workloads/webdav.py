"""The WebDAV front (``vaultfs webdav``) against the FUSE mount, in the same run: a
PROPFIND (Depth 1) of the folder of many small documents, and a GET of the big one;
and PROPFINDs of big folders (``Sizes.webdav_folders``: 10,000 and 100,000
documents) of a vault of their own made with the bulk create (as the ``scale``
workload makes its), against the mount's warm ``ls -l`` of the same folder, with the
front's memory after them. Cold: the front's first PROPFIND of the folder after its
start (its index built, the page cache dropped); warm: the same again (the median).

Both sides start cold: a new front and a new mount, each with a fresh cache, its index
built before anything is timed, the page cache dropped before each cold run. The
PROPFIND asks for what ``find -maxdepth 1 -ls`` shows of each entry (kind, size,
modification time, etag); its reference is that ``find`` on the mount. The GET is
``curl`` of the big document's source file through the front to /dev/null; its
references are the mount's read of the same file (cold: from the vault; warm: the
kernel's page cache) and ``curl`` of the same file straight from the vault. Warm: the
same again on the same front or mount (the median of the repeats).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from vaultfs.testing.mount_process import MountProcess
from vaultfs.testing.vault_process import VaultProcess, wait_until
from vaultfs.testing.webdav_process import WebdavProcess

from ..context import Context
from ..measure import median, read_file, rss_kib, timed_run
from ..results import Aim, Row, seconds, throughput
from . import scale

__all__ = ["run"]

_LOGIN = "POST /auth"
_PROPS = (
    '<?xml version="1.0" encoding="utf-8"?><propfind xmlns="DAV:"><prop>'
    "<resourcetype/><getcontentlength/><getetag/><getlastmodified/></prop></propfind>"
)
_XML = ("-H", "Content-Type: application/xml", "--data-binary", _PROPS)


class _Front(WebdavProcess):
    """A front of the bench vault, polling hourly (as the bench's mounts do), ready
    once its index is built; its API calls, logins left out."""

    def __init__(self, url: str, root: Path) -> None:
        super().__init__(url, root, args=["--poll-interval", "3600", "--log-level", "INFO"])

    def status(self) -> dict[str, Any]:
        status: dict[str, Any] = httpx.get(self.address + "/.vaultfs/status", timeout=60).json()
        return status

    def start(self, timeout: float = 300.0) -> _Front:
        super().start(timeout)
        try:
            wait_until(
                lambda: self.status()["index"]["ready"], timeout=timeout, what="the front's index"
            )
        except BaseException:
            self.stop()
            raise
        return self

    def api_calls(self) -> int:
        status = self.status()
        return int(status["api_calls"]) - int(status["api_calls_by_endpoint"].get(_LOGIN, 0))


def _propfind(url: str) -> tuple[float, int]:
    """Seconds a PROPFIND (Depth 1) of ``url`` took, and the responses it held."""
    started = time.perf_counter()
    body = subprocess.run(
        ["curl", "-sS", "--fail", "-X", "PROPFIND", "-H", "Depth: 1", *_XML, url],
        capture_output=True,
        check=True,
    ).stdout
    return time.perf_counter() - started, body.count(b"response>") // 2


def _get(url: str, size: int) -> float:
    """Seconds ``curl`` took to GET ``url`` (``size`` bytes) to /dev/null."""
    started = time.perf_counter()
    got = subprocess.run(
        ["curl", "-sS", "--fail", "-o", "/dev/null", "-w", "%{size_download}", url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    if int(got) != size:
        raise RuntimeError(f"GET through the front gave {got} bytes, not {size}")
    return time.perf_counter() - started


def run(ctx: Context) -> list[Row]:
    return _small_and_big(ctx) + _big_folders(ctx)


def _big_folders(ctx: Context) -> list[Row]:
    """The PROPFIND of each big folder, cold and warm, against the mount's warm
    ``ls -l`` (aim: within 2x), and the front's memory after it."""
    repeats = ctx.sizes.repeats
    server = VaultProcess(ctx.workdir / "webdav-big-server", extra_args=scale.SERVER_ARGS)
    server.log_path = ctx.workdir / "webdav-big-server.log"
    folder = scale.FOLDER
    url = "/" + quote(str(folder)) + "/"
    rows = []
    made = 0
    try:
        server.start()
        for count in ctx.sizes.webdav_folders:
            with scale.session(server) as client:
                scale.build(client, count, start=made)
            made = count
            mount = MountProcess(
                server.url,
                ctx.workdir,
                options="poll_interval=3600",
                cache_dir=ctx.scratch(f"webdav-big-cache-{count}"),
                log_level="INFO",
                mountpoint=ctx.workdir / "webdav-big-mnt",
            )
            try:
                mount.start(timeout=600)
                timed_run(["ls", "-l", str(mount.mountpoint / folder)])  # into the kernel
                ls_l = median(
                    [
                        timed_run(["ls", "-l", str(mount.mountpoint / folder)])
                        for _ in range(repeats)
                    ]
                )
            finally:
                mount.stop()
            root = ctx.scratch(f"webdav-big-{count}")
            root.mkdir()
            with _Front(server.url, root) as front:
                ctx.drop_caches()
                cold, listed = _propfind(front.address + url)
                warm = median([_propfind(front.address + url)[0] for _ in range(repeats)])
                assert front.proc is not None
                rss_mib = rss_kib(front.proc.pid) / 1024
            if listed - 1 < count:
                raise RuntimeError(f"the front listed {listed - 1} of {count} documents")
            reference = f"mount, ls -l, warm: {seconds(ls_l)}"
            rows += [
                Row(
                    f"PROPFIND Depth 1 of a folder of {count} documents through the front, cold",
                    seconds(cold),
                    reference,
                    cold / ls_l,
                    None,
                ),
                Row(
                    f"PROPFIND Depth 1 of a folder of {count} documents through the front, warm",
                    seconds(warm),
                    reference,
                    warm / ls_l,
                    Aim(False, 2),
                ),
                Row(
                    f"front's memory (VmRSS) after PROPFINDs of {count} documents",
                    f"{rss_mib:.0f} MiB",
                    "—",
                    None,
                    None,
                ),
            ]
    finally:
        server.stop()
    return rows


def _small_and_big(ctx: Context) -> list[Row]:
    data, repeats = ctx.data, ctx.sizes.repeats
    size = data.big_size
    folder_url = "/" + quote(str(data.listing_dir)) + "/"
    big_url = "/" + quote(str(data.big_path))
    with ctx.mount() as mount:
        directory = mount.root / data.listing_dir
        ctx.drop_caches()
        find_cold = timed_run(["find", str(directory), "-maxdepth", "1", "-ls"])
        find_warm = median(
            [timed_run(["find", str(directory), "-maxdepth", "1", "-ls"]) for _ in range(repeats)]
        )
        ctx.drop_caches()
        read_cold = read_file(mount.root / data.big_path).total
        read_warm = median([read_file(mount.root / data.big_path).total for _ in range(repeats)])
    ctx.drop_caches()
    curl = median([ctx.vault.curl_download(data.big_id, size).total for _ in range(repeats)])
    root = ctx.scratch("webdav")
    root.mkdir()
    with _Front(ctx.vault.server.url, root) as front:
        ctx.drop_caches()
        before = front.api_calls()
        propfind_cold, listed = _propfind(front.address + folder_url)
        propfind_calls = front.api_calls() - before
        propfind_warm = median([_propfind(front.address + folder_url)[0] for _ in range(repeats)])
        ctx.drop_caches()
        before = front.api_calls()
        get_cold = _get(front.address + big_url, size)
        get_calls = front.api_calls() - before
        get_warm = median([_get(front.address + big_url, size) for _ in range(repeats)])
    entries = listed - 1  # the folder itself is the first response
    return [
        Row(
            f"PROPFIND Depth 1 of a folder of {entries} entries through the front, cold",
            seconds(propfind_cold),
            f"mount, find -maxdepth 1 -ls, cold: {seconds(find_cold)}",
            find_cold / propfind_cold,
            None,
            str(propfind_calls),
        ),
        Row(
            f"PROPFIND Depth 1 of a folder of {entries} entries through the front, warm",
            seconds(propfind_warm),
            f"mount, find -maxdepth 1 -ls, warm: {seconds(find_warm)}",
            find_warm / propfind_warm,
            None,
        ),
        Row(
            f"GET of the {size >> 20} MiB document through the front (curl), cold",
            throughput(size, get_cold),
            f"mount read, cold: {throughput(size, read_cold)}; curl from the vault: "
            f"{throughput(size, curl)}",
            read_cold / get_cold,
            None,
            str(get_calls),
        ),
        Row(
            f"GET of the {size >> 20} MiB document through the front (curl), warm",
            throughput(size, get_warm),
            f"mount read, warm: {throughput(size, read_warm)}",
            read_warm / get_warm,
            None,
        ),
    ]
