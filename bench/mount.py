"""A vaultfs mount of the bench vault: the tests' ``MountProcess`` with a bench's needs.

Every mount gets a fresh cache directory (so a new mount is a cold mount), polls the
index only hourly (its calls would blur a workload's count), and is ready once its
document index is built. It reports the API calls made so far, logins left out. Its
walks' share of the vault's budget is lifted: a workload here measures how fast a walk
of the whole data set goes (its calls are counted in its row), where the default share
would refuse it part way (the share itself is the scale workload's, at its default).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from vaultfs.testing.mount_process import MountProcess
from vaultfs.testing.vault_process import wait_until

__all__ = ["Mount"]

_LOGIN = "POST /auth"
#: a walks' share no workload here reaches
_UNBOUNDED = 100_000_000


class Mount(MountProcess):
    def __init__(self, url: str, workdir: Path) -> None:
        super().__init__(
            url,
            workdir,
            options=f"poll_interval=3600,walk_burst={_UNBOUNDED},walk_calls={_UNBOUNDED}",
            cache_dir=Path(tempfile.mkdtemp(prefix="cache-", dir=workdir)),
            log_level="INFO",
        )
        #: seconds from starting the process until its index was built
        self.seconds_to_index = 0.0

    @property
    def root(self) -> Path:
        return self.mountpoint

    def start(self, timeout: float = 300.0, *, wait_index: bool = True) -> Mount:
        started = time.perf_counter()
        super().start(timeout, wait_index=wait_index)
        try:
            wait_until(lambda: self.status()["index"]["ready"], timeout=timeout, what="the index")
        except BaseException:
            self.stop()
            raise
        self.seconds_to_index = time.perf_counter() - started
        return self

    def api_calls(self) -> int:
        """API calls made so far, logins left out (a session is not a workload's cost)."""
        status = self.status()
        return int(status["api_calls"]) - int(status["api_calls_by_endpoint"].get(_LOGIN, 0))

    def indexed_documents(self) -> int:
        return int(self.status()["index"]["documents"])

    def stop(self, timeout: float = 60.0) -> None:
        """Unmount, end the daemon, and delete the cache."""
        super().stop(timeout)
        shutil.rmtree(self.cache_dir, ignore_errors=True)

    def __enter__(self) -> Mount:
        return self.start()
