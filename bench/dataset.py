"""The data set: seeded, reproducible documents created in the bench vault.

Owns what the vault holds for the workloads and where each part shows up in a mount:
one big binary document, many small text documents for listing, medium text documents
for grep and rsync (every tenth carries a needle near its end), and a document that cp
writes over. The same seed gives the same bytes on every machine.
"""

from __future__ import annotations

import base64
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .sizes import Sizes
from .vault import NewDocument, Vault

__all__ = ["NEEDLE", "Dataset", "build", "random_file", "unbuilt"]

SEED = 20251122
#: what grep looks for: contains '-', which base64 text never does
NEEDLE = b"vaultfs-needle-7f3a"
_NEEDLE_EVERY = 10
_LIFECYCLE = "general_lifecycle__c"
_GENERAL = {"type__v": "general__c"}
_LISTING = {"type__v": "promotional_piece__c", "subtype__v": "advertisement__c"}
_GREP = {"type__v": "promotional_piece__c", "subtype__v": "brochure__c"}
_CHUNK = 8 << 20


@dataclass
class Dataset:
    big_id: int
    big_size: int
    #: mount-relative paths
    big_path: Path
    listing_dir: Path
    listing_docs: int
    grep_dir: Path
    grep_ids: list[int]
    grep_matches: int
    cp_id: int
    cp_path: Path
    #: the big document's bytes as a local file (the warm-read reference)
    big_local: Path
    seconds_to_build: float


def random_file(path: Path, size: int, seed: int) -> Path:
    """Write ``size`` seeded random bytes to ``path``."""
    rng = random.Random(seed)
    with path.open("wb") as f:
        left = size
        while left:
            n = min(_CHUNK, left)
            f.write(rng.randbytes(n))
            left -= n
    return path


def text_bytes(seed: int, size: int, needle: bool = False) -> bytes:
    """``size`` bytes of seeded base64 lines; with ``needle`` one line ends in it."""
    raw = base64.encodebytes(random.Random(seed).randbytes(size * 3 // 4 + 3))[:size]
    if needle:
        at = max(0, size - len(NEEDLE) - 200)
        raw = raw[:at] + NEEDLE + raw[at + len(NEEDLE) :]
    return raw


def _document(
    where: dict[str, str], name: str, filename: str, content: bytes | Path
) -> NewDocument:
    fields = {**where, "name__v": name, "lifecycle__v": _LIFECYCLE}
    return NewDocument(fields, filename, content)


def _small_text(number: int, rng: random.Random) -> bytes:
    return text_bytes(SEED + 10 + number, rng.randint(512, 4096))


def _grep_text(number: int, sizes: Sizes) -> bytes:
    return text_bytes(SEED + 100_000 + number, sizes.grep_doc_bytes, number % _NEEDLE_EVERY == 0)


def build(vault: Vault, sizes: Sizes, workdir: Path, log: Callable[[str], None] = print) -> Dataset:
    """Create the data set in ``vault``; local copies go to ``workdir``."""
    started = time.perf_counter()
    big_local = random_file(workdir / "big.bin", sizes.big_bytes, SEED)
    log(f"creating the big document ({sizes.big_bytes >> 20} MiB)")
    (big_id,) = vault.create([_document(_GENERAL, "Big", "big.bin", big_local)])
    (cp_id,) = vault.create(
        [_document(_GENERAL, "Copy target", "target.bin", text_bytes(SEED + 1, 4096))]
    )
    log(f"creating {sizes.listing_docs} small documents")
    rng = random.Random(SEED + 2)
    vault.create(
        [
            _document(_LISTING, f"L{i:05d}", f"l{i:05d}.txt", _small_text(i, rng))
            for i in range(sizes.listing_docs)
        ]
    )
    log(f"creating {sizes.grep_docs} documents of {sizes.grep_doc_bytes >> 10} KiB")
    grep_ids = vault.create(
        [
            _document(_GREP, f"G{i:04d}", f"g{i:04d}.txt", _grep_text(i, sizes))
            for i in range(sizes.grep_docs)
        ]
    )
    return Dataset(
        big_id=big_id,
        big_size=sizes.big_bytes,
        big_path=Path("General/Big/big.bin"),
        listing_dir=Path("Promotional Piece/Advertisement"),
        listing_docs=sizes.listing_docs,
        grep_dir=Path("Promotional Piece/Brochure"),
        grep_ids=grep_ids,
        grep_matches=len(range(0, sizes.grep_docs, _NEEDLE_EVERY)),
        cp_id=cp_id,
        cp_path=Path("General/Copy target/target.bin"),
        big_local=big_local,
        seconds_to_build=time.perf_counter() - started,
    )


def unbuilt() -> Dataset:
    """The data set of a run whose workloads make vaults of their own (none is built)."""
    nowhere = Path("/nonexistent")
    return Dataset(0, 0, nowhere, nowhere, 0, nowhere, [], 0, 0, nowhere, nowhere, 0.0)
