"""Unit tests of the server's storage layer and helpers (no HTTP)."""

from __future__ import annotations

import hashlib
import io
import itertools
import sqlite3
import stat
import zipfile
from pathlib import Path

import pytest

from vaultfs.errors import ApiLimitExceeded, InvalidData
from vaultfs.server.downloads import content_disposition
from vaultfs.server.limits import RateLimiter
from vaultfs.server.samples import docx_bytes, pdf_bytes, png_bytes
from vaultfs.server.storage.blobs import BlobStore, TooLarge
from vaultfs.server.storage.db import Database
from vaultfs.server.storage.fields import STANDARD_FIELDS, parse_value


@pytest.fixture
def store(tmp_path: Path) -> BlobStore:
    blobs = BlobStore(tmp_path / "blobs")
    blobs.open()
    return blobs


async def test_blob_writer_hashes_and_stores_private_files(store: BlobStore) -> None:
    data = b"a" * (3 * 1024 * 1024 + 5)
    writer = store.writer(len(data))
    await writer.open()
    for start in range(0, len(data), 65536):
        await writer.write(data[start : start + 65536])
    info = await writer.finish()
    assert info.md5 == hashlib.md5(data).hexdigest()
    assert info.sha256 == hashlib.sha256(data).hexdigest() and info.size == len(data)
    path = store.path(info.sha256)
    assert path.read_bytes() == data
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert list(store.tmp.iterdir()) == []
    # The same content again is stored once.
    assert store.put_bytes(data) == info


async def test_blob_writer_abort_and_limit_leave_nothing(store: BlobStore) -> None:
    writer = store.writer(10)
    await writer.open()
    await writer.write(b"12345")
    with pytest.raises(TooLarge):
        await writer.write(b"678901")
    await writer.abort()
    assert list(store.tmp.iterdir()) == []
    assert list(store.root.glob("??/??/*")) == []


def test_sweep_keeps_only_referenced_blobs(store: BlobStore) -> None:
    keep = store.put_bytes(b"keep")
    drop = store.put_bytes(b"drop")
    (store.tmp / "upload-leftover").write_bytes(b"partial")
    assert store.sweep({keep.sha256}) == 2
    assert store.path(keep.sha256).exists() and not store.path(drop.sha256).exists()


def test_database_transactions_roll_back_and_clock_increases(tmp_path: Path) -> None:
    db = Database(tmp_path / "v.sqlite3")
    db.open()
    try:

        def half_made(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO vaults (id, name, dns) VALUES (7, 'x', 'x')")
            raise RuntimeError("crash mid-request")

        with pytest.raises(RuntimeError):
            db.write_sync(half_made)
        count = db.read_sync(lambda conn: conn.execute("SELECT count(*) FROM vaults").fetchone())
        assert count[0] == 0
        ticks = [db.tick() for _ in range(1000)]
        assert all(a < b for a, b in itertools.pairwise(ticks))
    finally:
        db.close()


def test_rate_limiter_counts_and_refuses() -> None:
    limiter = RateLimiter(burst_limit=2, daily_limit=10)
    assert limiter.charge(1).burst == 1
    assert limiter.charge(1).burst == 0
    with pytest.raises(ApiLimitExceeded) as raised:
        limiter.charge(1)
    assert raised.value.retry_after is not None and 0 < raised.value.retry_after <= 300
    # Vaults are counted apart.
    assert limiter.charge(2).burst == 1 and limiter.peek(2).daily == 9


def test_parse_value_by_field_type() -> None:
    fields = {f["name"]: f for f in STANDARD_FIELDS}
    assert parse_value(fields["language__v"], "english, French") == ["English", "French"]
    assert parse_value(fields["title__v"], "A title") == "A title"
    with pytest.raises(InvalidData, match="language__v"):
        parse_value(fields["language__v"], "Klingon")
    with pytest.raises(InvalidData, match="name__v"):
        parse_value(fields["name__v"], "x" * 101)


def test_content_disposition() -> None:
    assert content_disposition("a b.pdf") == 'attachment;filename="a b.pdf"'
    value = content_disposition('Ü"x.txt')
    assert value.startswith('attachment;filename="__x.txt"')
    assert value.endswith("filename*=UTF-8''%C3%9C%22x.txt")


def test_generated_samples_are_valid_files() -> None:
    assert png_bytes(4, 4, (1, 2, 3)).startswith(b"\x89PNG\r\n\x1a\n")
    pdf = pdf_bytes("Title", ["line (1)"])
    assert pdf.startswith(b"%PDF-1.4") and pdf.rstrip().endswith(b"%%EOF")
    xref = int(pdf.rsplit(b"startxref\n", 1)[1].split(b"\n")[0])
    assert pdf[xref:].startswith(b"xref")
    with zipfile.ZipFile(io.BytesIO(docx_bytes(["Hello"]))) as archive:
        assert b"Hello" in archive.read("word/document.xml")
    assert docx_bytes(["same"]) == docx_bytes(["same"])
