"""Full-text search of file content: text extraction at upload time and the text index.

The text of a stored file is extracted once, when it is uploaded (in a worker thread,
before the write transaction), and kept in the FTS5 table ``blob_text`` under the
file's sha256, so identical content is indexed once (on PostgreSQL the table has a
generated ``tsvector`` with a GIN index instead). Text-like files (``text/*``,
JSON, XML, CSV, Markdown) are decoded as UTF-8; PDFs give the strings of their text
operators (best effort: enough for simple PDFs such as the demo's); .docx files the
text of their paragraphs; other formats have no text.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO
from xml.etree import ElementTree

from .content import media_type
from .sql import Conn, dialect_of, is_postgres

__all__ = [
    "CONTENT_MATCH",
    "content_matches",
    "extract_text",
    "index_text",
    "matched_terms",
    "text_query",
]

#: Text beyond this many bytes of a file is not indexed.
_MAX_TEXT = 8 * 1024 * 1024
_TEXT_TYPES = ("application/json", "application/xml", "application/csv", "text/")
_TEXT_SUFFIXES = (".md", ".markdown", ".csv", ".txt", ".json", ".xml", ".yaml", ".yml")
#: the end of a stream object's dictionary and its ``stream`` keyword
_PDF_STREAM = re.compile(rb">>\s*stream\r?\n")
#: how far before its ``stream`` keyword a stream's dictionary is looked for
_PDF_DICT_WINDOW = 4096
_PDF_STRING = re.compile(rb"\((?:\\.|[^\\)])*\)")
_WORD = re.compile(r"\w+")


def _pdf_streams(data: bytes) -> Iterator[tuple[bytes, bytes]]:
    """(dictionary, content) of each stream object, in one pass over ``data``: a
    pattern spanning from ``<<`` to ``endstream`` would rescan the rest of the file
    from every ``<<`` (minutes for a big file that is not really a PDF)."""
    pos = 0
    while (keyword := _PDF_STREAM.search(data, pos)) is not None:
        end = data.find(b"endstream", keyword.end())
        if end < 0:
            return
        obj = data.rfind(b"obj", max(0, keyword.start() - _PDF_DICT_WINDOW), keyword.start())
        content = data[keyword.end() : end]
        content = content[:-1] if content.endswith(b"\n") else content
        content = content[:-1] if content.endswith(b"\r") else content
        yield data[obj + 3 if obj >= 0 else keyword.start() : keyword.start()], content
        pos = end + len(b"endstream")


def _pdf_text(data: bytes) -> str:
    parts: list[str] = []
    for header, stream in _pdf_streams(data):
        if b"/FlateDecode" in header:
            try:
                stream = zlib.decompress(stream)
            except zlib.error:
                continue
        for literal in _PDF_STRING.findall(stream):
            body = literal[1:-1]
            body = re.sub(rb"\\([()\\])", rb"\1", body)
            parts.append(body.decode("latin-1"))
    return "\n".join(parts)


def _open(source: Path | bytes) -> IO[bytes]:
    return io.BytesIO(source) if isinstance(source, bytes) else source.open("rb")


def _docx_text(source: Path | bytes) -> str:
    with _open(source) as f, zipfile.ZipFile(f) as archive:
        xml = archive.read("word/document.xml")
    root = ElementTree.fromstring(xml)
    return "\n".join(node.text or "" for node in root.iter() if node.tag.endswith("}t"))


def extract_text(source: Path | bytes, filename: str) -> str | None:
    """The searchable text of a file (on local disk, or its bytes) named ``filename``,
    or None (blocking; never raises)."""
    kind = media_type(filename)
    try:
        if kind.startswith(_TEXT_TYPES) or filename.lower().endswith(_TEXT_SUFFIXES):
            with _open(source) as f:
                return f.read(_MAX_TEXT).decode("utf-8", errors="replace")
        if kind == "application/pdf":
            with _open(source) as f:
                return _pdf_text(f.read(_MAX_TEXT * 4)) or None
        if filename.lower().endswith(".docx"):
            return _docx_text(source)[:_MAX_TEXT] or None
    except (OSError, zipfile.BadZipFile, KeyError, ElementTree.ParseError, ValueError):
        # Unreadable or malformed content is simply not searchable.
        return None
    return None


#: The condition that a version's file text matches one ``text_query`` (a parameter).
CONTENT_MATCH = {
    "sqlite": "v.blob IN (SELECT sha256 FROM blob_text WHERE blob_text MATCH ?)",
    "postgresql": "v.blob IN (SELECT sha256 FROM blob_text WHERE tsv @@ to_tsquery('simple', ?))",
}
_BLOB_MATCH = {
    "sqlite": "SELECT 1 FROM blob_text WHERE blob_text MATCH ? AND sha256 = ?",
    "postgresql": "SELECT 1 FROM blob_text WHERE tsv @@ to_tsquery('simple', ?) AND sha256 = ?",
}


def index_text(conn: Conn, sha256: str, text: str | None) -> None:
    if text is None:
        return
    if conn.execute("SELECT 1 FROM blob_text WHERE sha256 = ?", (sha256,)).fetchone():
        return
    if is_postgres(conn):
        # PostgreSQL text cannot hold NUL; it separates nothing searchable anyway.
        text = text.replace("\x00", " ")
    conn.execute("INSERT INTO blob_text (sha256, body) VALUES (?, ?)", (sha256, text))


def text_query(conn: Conn, word: str) -> str | None:
    """The full-text query for one search keyword (a prefix phrase), None when it has
    no word: FTS5's ``"a b"*`` or PostgreSQL's ``a <-> b:*``."""
    tokens = _WORD.findall(word)
    if not tokens:
        return None
    if is_postgres(conn):
        return " <-> ".join(t.lower() for t in tokens) + ":*"
    return '"' + " ".join(tokens) + '"*'


def content_matches(conn: Conn, sha256: str, word: str) -> bool:
    query = text_query(conn, word)
    if query is None:
        return False
    row = conn.execute(_BLOB_MATCH[dialect_of(conn)], (query, sha256)).fetchone()
    return row is not None


def matched_terms(conn: Conn, sha256: str | None, words: list[str]) -> list[str]:
    """The keywords found in a file's text (for ``term_highlights``)."""
    if sha256 is None:
        return []
    return [w for w in words if content_matches(conn, sha256, w)]
