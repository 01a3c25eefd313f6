"""The sizes of the data set: the full benchmark and the quick smoke run."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FULL", "QUICK", "MiB", "Sizes"]

MiB = 1 << 20


@dataclass(frozen=True)
class Sizes:
    #: the one big document read sequentially
    big_bytes: int
    #: documents listed by find -ls
    listing_docs: int
    #: documents grepped and rsynced, and the size of each
    grep_docs: int
    grep_doc_bytes: int
    #: the file copied over a document
    cp_bytes: int
    #: repetitions of every cheap measurement (the median is reported)
    repeats: int
    #: documents of the big vault of the ``scale`` workload
    scale_docs: int = 100_000
    #: the folders the ``webdav`` workload lists through the front (documents each)
    webdav_folders: tuple[int, ...] = (10_000, 100_000)
    #: the vaults the ``walk`` workload walks whole, views included (documents each)
    walk_vaults: tuple[int, ...] = (1_000, 10_000)


FULL = Sizes(
    big_bytes=512 * MiB,
    listing_docs=10_000,
    grep_docs=1_000,
    grep_doc_bytes=100 * 1024,
    cp_bytes=200 * MiB,
    repeats=3,
)

QUICK = Sizes(
    big_bytes=32 * MiB,
    listing_docs=400,
    grep_docs=100,
    grep_doc_bytes=100 * 1024,
    cp_bytes=16 * MiB,
    repeats=3,
    scale_docs=2_000,
    webdav_folders=(2_000,),
    walk_vaults=(300,),
)
