"""The durable-file steps of what the bridge keeps on disk.

Private directories (0700) and files (0600), fsync of a directory, JSON records replaced
atomically (old or new after a crash, never torn), checking a record read back against
its dataclass, and the harmless local names of files: the primitives the spool
(``store``, ``uploads``, ``lost``, ``creates``), the lease's marks, the pins and the
kept sign-in answer build their files from. Blocking: callers run the slow ones in a
worker thread.
"""

from __future__ import annotations

import json
import os
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "checked_fields",
    "ensure_private_dir",
    "fsync_dir",
    "number_named",
    "safe_filename",
    "write_json_atomically",
]

DIR_MODE = 0o700
FILE_MODE = 0o600


#: JSON types each annotation of a record accepts (``bool`` is no ``int`` here)
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "str": (str,),
    "bool": (bool,),
    "float": (float, int),
    "str | None": (str, type(None)),
    "int | None": (int, type(None)),
}


def checked_fields(cls: Any, data: Any) -> dict[str, Any]:
    """The fields of dataclass ``cls`` that ``data`` (parsed JSON) gives, each of the
    type the dataclass says, and every field without a default; ValueError otherwise.
    Unknown keys are ignored (a newer version may add some)."""
    if not isinstance(data, dict):
        raise ValueError(f"a record is a JSON object, not {type(data).__name__}")
    found: dict[str, Any] = {}
    for spec in fields(cls):
        if spec.name not in data:
            if spec.default is MISSING and spec.default_factory is MISSING:
                raise ValueError(f"no {spec.name}")
            continue
        value: Any = data[spec.name]
        found[spec.name] = value
        allowed = _JSON_TYPES.get(str(spec.type))
        if allowed is None:
            continue  # a type these checks do not cover: the record's own code reads it
        if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
            raise ValueError(f"{spec.name} is {value!r}")
        if allowed[0] is float and isinstance(value, int):
            found[spec.name] = float(value)
    return found


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` (mode 0700) or tighten an existing one to 0700."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    os.chmod(path, DIR_MODE)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json_atomically(path: Path, data: dict[str, Any]) -> None:
    """tmp + fsync + rename + fsync(dir): after a crash the file is old or new, whole."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        os.write(fd, json.dumps(data, indent=1, sort_keys=True).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def safe_filename(filename: str) -> str:
    """``filename`` (from the vault, or typed by a user) as one harmless path component."""
    safe = filename.replace("/", "_").replace("\0", "_")
    return "content" if safe in ("", ".", "..") else safe


def number_named(path: Path) -> int | None:
    """The number a spool file is named by (``12.json``, ``3.data``: 12, 3), None for any
    other name."""
    stem = path.name.split(".", 1)[0]
    return int(stem) if stem.isascii() and stem.isdigit() and str(int(stem)) == stem else None
