"""What every workload is handed: the vault, the data set, sizes, and cold starts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .dataset import Dataset
from .measure import drop_caches
from .mount import Mount
from .sizes import Sizes
from .vault import Vault

__all__ = ["Context"]


@dataclass
class Context:
    vault: Vault
    data: Dataset
    sizes: Sizes
    workdir: Path
    #: the scale workload's vault kept between runs (``--scale-vault``), None: its own
    scale_vault: Path | None = None
    #: the scale workload also times the server on PostgreSQL (``--scale-postgresql``)
    scale_postgresql: bool = False

    def mount(self) -> Mount:
        """A new mount with a fresh cache: a cold mount (start it with ``with``)."""
        return Mount(self.vault.server.url, self.workdir)

    def drop_caches(self) -> None:
        """Empty the page cache (where allowed), so that the server's blob files and the
        local reference files are read from disk: a cold start on both sides."""
        drop_caches()

    def scratch(self, name: str) -> Path:
        """A path under the run's work directory that does not exist yet."""
        path = self.workdir / name
        if path.exists():
            raise FileExistsError(path)
        return path
