"""``vaultfs search [--content] [-0] PATH WORDS...``: the documents under PATH that the
vault finds for WORDS, without downloading a file.

The command asks the mount's daemon through the mount itself, so it needs no
credentials and no pyfuse3: it lists ``<mount>/.search/all/WORDS`` (or
``.search/content/WORDS`` with ``--content``), the daemon's search folder
(``nodes.search``), reads each link's document directory and prints those at
or below PATH, one per line (NUL-terminated with ``-0``, for ``xargs -0``), as PATH
plus the rest of the path, as ``grep -rl`` would. Exit codes: 0 something matched,
1 nothing did, 2 a usage error (PATH not on a vaultfs mount, a word with ``/``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

__all__ = ["mount_root", "register", "search_paths"]

#: the mount's search directory and its two forms (``nodes.search``)
_SEARCH_DIR = ".search"
_CONTROL_DIR = ".vaultfs"


class UsageError(Exception):
    """The command cannot run as given (exit 2)."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    search = sub.add_parser(
        "search",
        help="list the documents under a path of a mounted vault that hold some words "
        "(the vault's search: no file is downloaded)",
    )
    search.add_argument(
        "--content", action="store_true", help="search the files' text only (not the fields)"
    )
    search.add_argument(
        "-0", dest="null", action="store_true", help="end each path with NUL (for xargs -0)"
    )
    search.add_argument("path", type=Path, help="a directory of the mount (its root: everywhere)")
    search.add_argument("words", nargs="+", help="every one of them must be found")
    search.set_defaults(handler=_search)


def mount_root(path: Path) -> Path:
    """The mount point of the vaultfs mount ``path`` is on."""
    current = Path(os.path.abspath(path))
    for candidate in (current, *current.parents):
        if os.path.ismount(candidate) and (candidate / _CONTROL_DIR).is_dir():
            return candidate
    raise UsageError(f"{path} is not on a vaultfs mount")


def search_paths(path: Path, words: list[str], *, content: bool) -> list[str]:
    """The paths (as ``path`` plus the rest) of the documents found at or below
    ``path``, in the vault's order."""
    if any("/" in word or "\0" in word for word in words):
        raise UsageError("a word cannot hold '/'")
    query = " ".join(words)
    if not query.split():
        raise UsageError("no words to search for")
    root = mount_root(path)
    folder = root / _SEARCH_DIR / ("content" if content else "all") / query
    base = os.path.normpath(os.path.abspath(path))
    found: list[str] = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if not entry.is_symlink():
                continue
            target = os.path.normpath(os.path.join(folder, os.readlink(entry.path)))
            if target != base and not target.startswith(base.rstrip("/") + "/"):
                continue
            rest = os.path.relpath(target, base)
            found.append(str(path) if rest == "." else os.path.join(str(path), rest))
    return found


def _search(args: argparse.Namespace) -> int:
    try:
        if not args.path.is_dir():
            raise UsageError(f"{args.path} is not a directory")
        found = search_paths(args.path, args.words, content=args.content)
    except UsageError as exc:
        print(f"vaultfs search: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"vaultfs search: {exc.filename or args.path}: {exc.strerror}", file=sys.stderr)
        return 2
    end = "\0" if args.null else "\n"
    out = sys.stdout.buffer
    for line in found:
        out.write(os.fsencode(line) + end.encode())
    out.flush()
    return 0 if found else 1
