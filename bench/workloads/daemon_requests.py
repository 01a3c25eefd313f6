"""What reached the daemon during a workload: its FUSE requests by operation
(``fuse_requests`` of ``.vaultfs/status``, counted by the daemon as they reach its Python
code), so a row can say whether a warm run was served by the kernel."""

from __future__ import annotations

from collections import Counter

from ..mount import Mount

__all__ = ["requests", "shares"]


def requests(mount: Mount) -> Counter[str]:
    """The requests that reached the daemon so far, by operation."""
    return Counter(mount.status().get("fuse_requests", {}))


def shares(counted: Counter[str], runs: int) -> str:
    """Requests per run by operation, largest first, with each one's share; the reads
    of the status file itself (an open, two reads and a release per look) included."""
    total = sum(counted.values())
    if not total:
        return "none"
    return ", ".join(
        f"{op} {count / runs:.0f} ({count / total:.0%})" for op, count in counted.most_common()
    )
