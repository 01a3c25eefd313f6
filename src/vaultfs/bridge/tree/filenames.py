"""File names of the tree: escaping labels and disambiguating siblings.

Owns the rules that turn whatever text a server sends (labels, document names, file
names) into safe, unique POSIX file names. The rules (also in docs/bridge.md):

* ``%`` followed by two hex digits is an escape; a literal ``%`` is escaped as
  ``%25`` only where it would otherwise read as an escape, so ``50% off`` stays as is.
* ``/`` becomes ``%2F``, NUL and the other control characters (``\x01``-``\x1f``,
  ``\x7f``: a name must not send escape sequences to a terminal) become ``%XX``; the
  names ``.`` and ``..`` become ``%2E`` and ``%2E%2E``; the empty name becomes
  ``%2E%00`` (which escaping never produces otherwise).
* A name that ends like a disambiguated one (`` [x]``, before an extension or not)
  has that ``[`` escaped as ``%5B``: only disambiguation makes such names, so a new
  document named ``Notes [3]`` can never take the path of document 3.
* Names longer than 255 bytes are cut (keeping a short extension) and end with ``~``
  and 10 hex digits of a hash of the whole escaped name, so cut names stay unique.
* Siblings with the same escaped name: the one with the smallest tie-break key keeps
  the plain name, every other gets `` [key]`` (before the extension for files), so
  adding a newer duplicate never renames an existing entry.

Escaping is reversible (``unescape``), and nothing produced here contains ``/`` or NUL
or equals ``.``/``..``, so no server text can make a path leave the mount.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

__all__ = [
    "MAX_NAME_BYTES",
    "Sibling",
    "assign_names",
    "escape",
    "single_name",
    "unescape",
]

MAX_NAME_BYTES = 255
#: the empty label (an escape sequence that escaping a real character never produces)
_EMPTY = "%2E%00"
_HEX_CHARS = frozenset("0123456789abcdefABCDEF")
_ESCAPE_SEQ = re.compile(r"%([0-9A-Fa-f]{2})")
#: longest extension kept intact when a long name is cut
_MAX_EXT_BYTES = 16
#: the end of a name that looks like a disambiguation suffix (`` [key]`` before an
#: optional extension): the ``[`` of such a literal name is escaped
_SUFFIX_LIKE = re.compile(r" \[[^\[\]]*\](\.[^.]{0,15})?$")
#: a label that escaping leaves as it is: no ``/``, ``%``, control character or `` [``,
#: and not empty, ``.`` or ``..``
_PLAIN = re.compile(r"(?!\.\.?\Z)(?:[^\x00-\x1f\x7f/%\[ ]| (?!\[)|\[)+")


def escape(label: str) -> str:
    """The file name standing for ``label`` (not yet cut to 255 bytes)."""
    if _PLAIN.fullmatch(label):  # most labels: one scan in C (a folder of 100,000)
        return label
    if label == "":
        return _EMPTY
    if label == ".":
        return "%2E"
    if label == "..":
        return "%2E%2E"
    out: list[str] = []
    for i, ch in enumerate(label):
        if ch == "/" or ch < " " or ch == "\x7f":
            out.append(f"%{ord(ch):02X}")
        elif ch == "%" and _is_hex(label[i + 1 : i + 3]):
            out.append("%25")
        else:
            out.append(ch)
    name = "".join(out)
    suffix = _SUFFIX_LIKE.search(name)
    if suffix is not None:  # the bracket is ASCII: no escape sequence ends there
        name = name[: suffix.start() + 1] + "%5B" + name[suffix.start() + 2 :]
    return name


def _is_hex(text: str) -> bool:
    return len(text) == 2 and all(c in _HEX_CHARS for c in text)


def unescape(name: str) -> str:
    """The label an escaped (uncut) name stands for; inverse of ``escape``."""
    if name == _EMPTY:
        return ""
    return _ESCAPE_SEQ.sub(lambda m: chr(int(m.group(1), 16)), name)


def _split_ext(name: str) -> tuple[str, str]:
    dot = name.rfind(".")
    if dot <= 0 or len(name[dot:].encode()) > _MAX_EXT_BYTES:
        return name, ""
    return name[:dot], name[dot:]


def _fits(name: str) -> bool:
    return len(name) <= MAX_NAME_BYTES // 4 or len(name.encode()) <= MAX_NAME_BYTES


def _cut(name: str, keep_ext: bool) -> str:
    """``name`` itself when it fits in 255 bytes, else a cut form with a hash suffix."""
    if _fits(name):
        return name
    stem, ext = _split_ext(name) if keep_ext else (name, "")
    tag = "~" + hashlib.sha256(name.encode()).hexdigest()[:10]
    room = MAX_NAME_BYTES - len(tag.encode()) - len(ext.encode())
    # Cut on a character boundary so the result stays valid UTF-8.
    cut = stem.encode()[:room].decode(errors="ignore")
    return cut + tag + ext


def _with_suffix(name: str, suffix: str, keep_ext: bool) -> str:
    stem, ext = _split_ext(name) if keep_ext else (name, "")
    return f"{stem} [{suffix}]{ext}"


class Sibling(NamedTuple):
    """One entry of a directory before naming: its label and a stable tie-break key.

    A tuple, not a dataclass: a folder of 100,000 documents makes 100,000 of them per
    listing, and a frozen dataclass takes three times as long to make."""

    label: str
    #: what tells it apart (document id, API name): shown as ``[key]`` when needed
    key: str
    #: order among duplicates: the smallest keeps the plain name
    rank: tuple[int, str] = (0, "")
    #: a file: disambiguation and cutting keep the extension
    is_file: bool = False


def _plain_names(labels: Sequence[str], reserved: Iterable[str] = ()) -> list[str] | None:
    """The escaped ``labels`` when they are the names (no two alike, none reserved, none
    to cut), else None: then ``assign_names`` tells them apart. Needs no ``Sibling``
    per entry: a folder of 100,000 documents is named in a few passes in C."""
    escaped = [escape(label) for label in labels]
    unique = set(escaped)
    if len(unique) == len(escaped) and unique.isdisjoint(reserved) and all(map(_fits, escaped)):
        return escaped
    return None


def single_name(label: str, is_file: bool = False) -> str:
    """The name of ``label`` when no sibling shares it (what ``assign_names`` gives a
    sibling alone)."""
    return _cut(escape(label), is_file)


def single_names(labels: list[str]) -> list[str]:
    """``single_name`` of each of ``labels`` (directories): most are their names as
    they are, told in one scan in C each (a page of a folder's listing)."""
    plain, short = _PLAIN.fullmatch, MAX_NAME_BYTES // 4
    return [
        label if len(label) <= short and plain(label) else single_name(label) for label in labels
    ]


def assign_names(siblings: Sequence[Sibling], reserved: Iterable[str] = ()) -> list[str]:
    """Unique, safe file names for ``siblings`` (same order), none equal to ``reserved``.

    Deterministic: the same siblings give the same names, whatever their order.
    """
    taken = set(reserved)
    plain = _plain_names([s.label for s in siblings], taken)
    if plain is not None:
        return plain  # no duplicate, nothing to cut: every name is its label's
    escaped = [escape(s.label) for s in siblings]
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(escaped):
        groups.setdefault(name, []).append(i)
    names: list[str | None] = [None] * len(siblings)
    suffixed: list[int] = []
    # Plain names first, so a literal "X [5]" keeps its name over a suffixed duplicate.
    for name, members in sorted(groups.items()):
        if len(members) > 1:
            members.sort(key=lambda i: (siblings[i].rank, siblings[i].key))
        first, rest = members[0], members[1:]
        if name in taken:
            suffixed.append(first)
        else:
            names[first] = _cut(name, siblings[first].is_file)
            taken.add(name)
            taken.add(names[first])  # type: ignore[arg-type]
        suffixed.extend(rest)
    for i in sorted(suffixed, key=lambda i: (escaped[i], siblings[i].rank, siblings[i].key)):
        sib = siblings[i]
        candidate = _with_suffix(escaped[i], escape(sib.key), sib.is_file)
        while candidate in taken:
            candidate = _with_suffix(candidate, escape(sib.key), sib.is_file)
        final = _cut(candidate, sib.is_file)
        taken.add(candidate)
        taken.add(final)
        names[i] = final
    return [n for n in names if n is not None]
