"""The command line of ``python -m bench``: build the vault, run workloads, report.

Everything started here (the server, every mount) is stopped in ``finally``, and the
work directory (data set copies, caches, the server's data) is deleted afterwards.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from vaultfs.bridge.commands.control import unmount
from vaultfs.bridge.daemon.capabilities import ENVIRONMENT as PYFUSE3_FEATURES

from . import dataset
from .context import Context
from .machine import describe, load_average
from .measure import can_drop_caches
from .results import Report
from .sizes import FULL, QUICK
from .vault import Vault
from .workloads import WORKLOADS

__all__ = ["main"]

_RESULTS = Path(__file__).parent / "results"

#: the ways a mount can run (``vaultfs.bridge.daemon.capabilities``), by the name rows
#: carry, and the daemon's ``VAULTFS_PYFUSE3_FEATURES`` for each (None: what pyfuse3
#: offers, with the project's patch: no OPENDIR, listings kept by the kernel)
WAYS = {
    "patched": None,
    "cache_readdir": "cache_readdir,xattr_namespaces",
    "stock": "none",
}
#: workloads whose figures depend on the way (the others run once, the first way)
_PER_WAY = frozenset({"read", "listing", "grep"})
#: workloads that start vaults of their own: a run of only these builds no data set
_OWN_VAULTS = frozenset({"servers", "scale", "walk", "offline"})


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument(
        "--only", nargs="+", choices=sorted(WORKLOADS), metavar="NAME",
        help=f"run only these workloads ({', '.join(WORKLOADS)})",
    )  # fmt: skip
    parser.add_argument(
        "--ways", nargs="+", choices=sorted(WAYS), default=["patched", "stock"], metavar="WAY",
        help="run the read, listing and grep workloads each of these ways: patched (what"
        " the installed pyfuse3 offers), cache_readdir, stock (exactly the stock"
        " pyfuse3's behaviour); default: patched stock",
    )  # fmt: skip
    parser.add_argument(
        "--scale-documents", type=int, metavar="N",
        help="documents of the scale workload's vault (default: 100000; quick: 2000);"
        " 1000000 is the big run, opt-in: it takes an hour or more here",
    )  # fmt: skip
    parser.add_argument(
        "--scale-vault", type=Path, metavar="DIR",
        help="keep the scale workload's vault in DIR between runs: its documents are made"
        " once (the bulk create of a million takes 15-25 minutes here), later runs only"
        " top it up to --scale-documents",
    )  # fmt: skip
    parser.add_argument(
        "--scale-postgresql", action="store_true",
        help="the scale workload also makes its vault on PostgreSQL (a throwaway cluster)"
        " and times the bulk create and the last list page there",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, help="result file (default: bench/results/...)")
    return parser.parse_args(argv)


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _preflight() -> None:
    missing = [p for p in ("curl", "rsync", "fusermount3", "grep", "find") if not shutil.which(p)]
    if missing:
        raise SystemExit(f"bench: missing programs: {', '.join(missing)}")
    if not os.path.exists("/dev/fuse"):
        raise SystemExit("bench: /dev/fuse is missing: cannot mount")


def _clean(workdir: Path) -> None:
    for mountpoint in [workdir / "mnt", *(workdir / way / "mnt" for way in WAYS)]:
        if os.path.ismount(mountpoint):
            unmount(mountpoint)
        if os.path.ismount(mountpoint):
            _log(f"{mountpoint} is still mounted: leaving {workdir} in place")
            return
    shutil.rmtree(workdir, ignore_errors=True)


def _load_note(before: str, loads: list[tuple[str, float]], cores: int) -> str:
    """The load average around the run. Only the load before it tells of other work: the
    run's own server, daemon and tools load the machine by one to two on their own."""
    during = ", ".join(f"{name} {load:.2f}" for name, load in loads)
    busy = float(before.split()[0]) >= 0.5 * cores
    verdict = "other work was running: figures are noisy" if busy else "the machine was quiet"
    return (
        f"load average (1, 5, 15 min) before: {before} ({cores} cores: {verdict}); after:"
        f" {load_average()}; 1-min load as each workload began (this run's own work"
        f" included): {during or 'none'}"
    )


def _set_way(way: str) -> None:
    """Mounts started from now on run ``way`` (they inherit the environment)."""
    setting = WAYS[way]
    if setting is None:
        os.environ.pop(PYFUSE3_FEATURES, None)
    else:
        os.environ[PYFUSE3_FEATURES] = setting


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    _preflight()
    sizes = QUICK if args.quick else FULL
    if args.scale_documents:
        sizes = replace(sizes, scale_docs=args.scale_documents)
    names = args.only or list(WORKLOADS)
    machine = describe()
    report = Report(machine)
    out = args.out or _RESULTS / (
        f"{machine['date'][:10]}-{machine['host']}{'-quick' if args.quick else ''}.md"
    )
    load_before = load_average()
    failed: list[str] = []
    built = "data set: not built"
    loads: list[tuple[str, float]] = []
    workdir = Path(tempfile.mkdtemp(prefix="vaultfs-bench-"))
    vault = Vault(workdir)
    try:
        _log(f"starting a local vault in {workdir}")
        vault.start()
        if set(names) <= _OWN_VAULTS:
            data = dataset.unbuilt()
            built = "data set: not needed (the workloads made vaults of their own)"
        else:
            data = dataset.build(vault, sizes, workdir, _log)
            built = f"data set: built through the API in {data.seconds_to_build:.0f} s"
        _log(built)
        for way in args.ways:
            _set_way(way)
            # A directory of each way's own: its mounts, caches and local references.
            ctx = Context(
                vault,
                data,
                sizes,
                workdir / way,
                scale_vault=args.scale_vault,
                scale_postgresql=args.scale_postgresql,
            )
            ctx.workdir.mkdir()
            for name in names:
                if way != args.ways[0] and name not in _PER_WAY:
                    continue
                _log(f"workload {name} ({way})")
                loads.append((f"{name} ({way})", os.getloadavg()[0]))
                try:
                    rows = WORKLOADS[name](ctx)
                except Exception as exc:  # one broken workload must not hide the others
                    _log(f"workload {name} failed: {exc!r}")
                    failed.append(f"workload `{name}` ({way}) failed: {exc!r}")
                    continue
                for row in rows:
                    if name in _PER_WAY and len(args.ways) > 1:
                        row.workload = f"[{way}] {row.workload}"
                report.rows += rows
    finally:
        vault.stop()
        _clean(workdir)
    report.notes += [
        _load_note(load_before, loads, int(machine["cores"])),
        "cold: fresh mount and fresh cache directory, "
        + (
            "page cache dropped (echo 3 > /proc/sys/vm/drop_caches) before vaultfs and "
            "reference runs alike"
            if can_drop_caches()
            else "page cache NOT dropped (needs root): the server's files were warm"
        ),
        "ways: "
        + ", ".join(f"{w} ({PYFUSE3_FEATURES}={WAYS[w] or 'unset'})" for w in args.ways)
        + "; each mount's log names the features it used",
        f"every figure is the median of {sizes.repeats} runs, except the cold listings (one"
        " run each)",
        "API calls: from the mount's .vaultfs/status (api_calls), logins left out",
        built,
        *failed,
    ]
    print(report.table())
    report.write(out)
    _log(f"written to {out}")
    return 1 if failed else 0
