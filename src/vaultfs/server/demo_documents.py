"""The demo vault's documents: about twenty of several formats with several versions
(real files: text, Markdown, CSV, PDF, DOCX, PNG), viewable renditions, a few
attachments, and three relationships (one to a version of its target). Some names are
awkward on purpose (a ``/``, unicode, two documents with the same name). Data, and the
functions that create it through the storage layer (``add_documents``,
``add_relationships``), called by ``demo.ensure_demo_vault``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from .demo_metadata import DEMO_VAULT_ID
from .samples import docx_bytes, pdf_bytes, png_bytes
from .storage import attachments, changes, renditions, users
from .storage.content import StoredFile

__all__ = ["DAY_MS", "add_documents", "add_relationships"]

DAY_MS = 86_400_000


@dataclass(frozen=True)
class _Doc:
    name: str
    type: str
    subtype: str | None
    classification: str | None
    kind: str  # txt | md | csv | pdf | docx | png
    versions: tuple[tuple[int, int], ...]
    extra: tuple[tuple[str, str], ...] = ()
    attachments: int = 0


#: Fields that make a Draft document ready for ``approve`` (its entry requirement
#: ``country__v``, scope Document): a first client can approve one at once.
_READY = (("country__v", "united_states__v"),)

_DOCS = [
    _Doc(
        "Employee Handbook",
        "general__c",
        None,
        None,
        "pdf",
        ((0, 1), (0, 2), (1, 0)),
        attachments=2,
    ),
    _Doc("Meeting Notes", "general__c", None, None, "txt", ((0, 1), (0, 2)), _READY),
    _Doc("Meeting Notes", "general__c", None, None, "md", ((0, 1),)),
    _Doc(
        "Q3 Results / Forecast",
        "general__c",
        None,
        None,
        "csv",
        ((0, 1), (0, 2), (0, 3)),
        _READY,
    ),
    _Doc("Überblick: Jahresbericht ✓", "general__c", None, None, "docx", ((0, 1), (1, 0))),
    _Doc("Company Logo", "general__c", None, None, "png", ((0, 1), (0, 2))),
    _Doc("Travel Policy", "general__c", None, None, "docx", ((0, 1), (0, 2), (1, 0), (1, 1))),
    _Doc("Release Checklist", "general__c", None, None, "md", ((0, 1),), _READY, attachments=1),
    _Doc("Price List 2024", "general__c", None, None, "csv", ((0, 1), (1, 0))),
    _Doc(
        "Spring Campaign Poster",
        "promotional_piece__c",
        "advertisement__c",
        None,
        "png",
        ((0, 1), (0, 2), (1, 0)),
    ),
    _Doc(
        "Radio Spot Script",
        "promotional_piece__c",
        "advertisement__c",
        None,
        "txt",
        ((0, 1),),
        (("audience__c", "Patient"),),
    ),
    _Doc(
        "Product Brochure",
        "promotional_piece__c",
        "brochure__c",
        None,
        "pdf",
        ((0, 1), (0, 2), (0, 3), (1, 0)),
        attachments=1,
    ),
    _Doc(
        "Patient Leaflet",
        "promotional_piece__c",
        "brochure__c",
        None,
        "docx",
        ((0, 1), (0, 2)),
        (("audience__c", "Patient"),),
    ),
    _Doc(
        "Study ABC-123 Protocol",
        "clinical__c",
        "protocol__c",
        "final_protocol__c",
        "pdf",
        ((0, 1), (1, 0)),
        (("study_number__c", "ABC-123"),),
    ),
    _Doc(
        "Study XYZ-9 Protocol",
        "clinical__c",
        "protocol__c",
        "final_protocol__c",
        "docx",
        ((0, 1), (0, 2), (0, 3)),
        (("study_number__c", "XYZ-9"),),
    ),
    _Doc(
        "Protocol Amendment 1",
        "clinical__c",
        "protocol__c",
        "amendment__c",
        "pdf",
        ((0, 1), (0, 2)),
        (("study_number__c", "ABC-123"), ("amendment_number__c", "1")),
    ),
    _Doc(
        "Protocol Amendment 2",
        "clinical__c",
        "protocol__c",
        "amendment__c",
        "txt",
        ((0, 1),),
        (("study_number__c", "ABC-123"), ("amendment_number__c", "2")),
    ),
    _Doc(
        "Dosing Table",
        "clinical__c",
        "protocol__c",
        "final_protocol__c",
        "csv",
        ((0, 1), (0, 2)),
        (("study_number__c", "XYZ-9"),),
    ),
    _Doc(
        "Site Contact List",
        "clinical__c",
        "protocol__c",
        "amendment__c",
        "csv",
        ((0, 1),),
        (("study_number__c", "XYZ-9"),),
    ),
    _Doc(
        "Investigator Notes",
        "clinical__c",
        "protocol__c",
        "final_protocol__c",
        "md",
        ((0, 1), (0, 2), (0, 3), (0, 4)),
        (("study_number__c", "ABC-123"),),
    ),
]

_COLOURS = [(52, 101, 164), (204, 0, 0), (78, 154, 6), (196, 160, 0), (117, 80, 123)]


def _content(doc: _Doc, number: int, major: int, minor: int) -> bytes:
    lines = [
        f"{doc.name}",
        f"Version {major}.{minor}",
        "",
        "This is sample content of the vaultfs demo vault.",
        f"Document {number} of the demo set.",
    ]
    if doc.kind in ("txt", "md"):
        head = f"# {doc.name}\n\n" if doc.kind == "md" else ""
        return (
            head + "\n".join(lines[1:]) + "\n" + "Lorem ipsum dolor sit amet.\n" * minor
        ).encode()
    if doc.kind == "csv":
        rows = ["item,quantity,price"] + [
            f"item {i},{i * (minor + 1)},{i * 9.5:.2f}" for i in range(1, 6 + minor)
        ]
        return ("\n".join(rows) + "\n").encode()
    if doc.kind == "pdf":
        return pdf_bytes(doc.name, lines[1:])
    if doc.kind == "docx":
        return docx_bytes(lines)
    colour = _COLOURS[(number + minor) % len(_COLOURS)]
    return png_bytes(48 + 8 * minor, 32, colour, border=2)


def _filename(doc: _Doc) -> str:
    return doc.name.replace("/", "-").replace(" ", "_") + "." + doc.kind


def add_documents(
    conn: sqlite3.Connection,
    store: Callable[[bytes, str], StoredFile],
    people: dict[str, users.SessionUser],
    start_ms: int,
) -> None:
    admin, editor = people["admin"], people["editor"]
    clock = start_ms
    for number, doc in enumerate(_DOCS, start=1):
        author = editor if number % 2 else admin
        filename = _filename(doc)
        form = {
            "name__v": doc.name,
            "type__v": doc.type,
            "lifecycle__v": "General Lifecycle",
            "title__v": f"{doc.name} (demo)",
            **dict(doc.extra),
        }
        if doc.subtype:
            form["subtype__v"] = doc.subtype
        if doc.classification:
            form["classification__v"] = doc.classification
        first_major, first_minor = doc.versions[0]
        form["major_version_number__v"] = str(first_major)
        form["minor_version_number__v"] = str(first_minor)
        clock += DAY_MS // 7
        doc_id = changes.create_document(
            conn,
            author,
            form,
            store(_content(doc, number, first_major, first_minor), filename),
            clock,
        )
        for major, minor in doc.versions[1:]:
            clock += DAY_MS // 7
            changes.create_version(
                conn,
                author,
                doc_id,
                "uploadedContent",
                store(_content(doc, number, major, minor), filename),
                None,
                clock,
                number=(major, minor),
                status="Approved" if minor == 0 else None,
            )
        # Viewable renditions (a PDF) on the versions of most documents.
        if number % 5:
            for major, minor in doc.versions:
                pdf = pdf_bytes(f"{doc.name} (viewable)", [f"Version {major}.{minor}"])
                renditions.put_rendition(
                    conn,
                    author,
                    doc_id,
                    (major, minor),
                    "viewable_rendition__v",
                    store(pdf, "viewable_rendition.pdf"),
                    False,
                    clock,
                )
        for index in range(doc.attachments):
            text = f"Attachment {index + 1} of {doc.name}\n".encode()
            attachments.add_attachment(
                conn,
                author,
                doc_id,
                store(text, f"notes-{index + 1}.txt"),
                f"Supporting notes {index + 1}",
                clock,
            )


#: (source, type, target, target version or None): relationships of the demo, from the
#: source's latest version, so a mount has links to show under ``relationships/``
_RELATIONSHIPS = [
    ("Release Checklist", "references__vs", "Q3 Results / Forecast", None),
    ("Patient Leaflet", "references__vs", "Product Brochure", None),
    ("Protocol Amendment 1", "basedon__vs", "Study ABC-123 Protocol", "latest"),
]


def add_relationships(conn: sqlite3.Connection, author: int, when: int) -> None:
    def latest(name: str) -> tuple[int, int, int]:
        row = conn.execute(
            "SELECT d.id, d.latest_major, d.latest_minor FROM documents d JOIN versions v"
            " ON v.doc_id = d.id AND v.major = d.latest_major AND v.minor = d.latest_minor"
            " WHERE d.vault_id = ? AND v.name = ?",
            (DEMO_VAULT_ID, name),
        ).fetchone()
        return int(row[0]), int(row[1]), int(row[2])

    for source, rtype, target, pinned in _RELATIONSHIPS:
        source_id, major, minor = latest(source)
        target_id, target_major, target_minor = latest(target)
        conn.execute(
            "INSERT INTO relationships (source_doc, source_major, source_minor, target_doc,"
            " target_major, target_minor, relationship_type, created_by, created_ms)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                source_id,
                major,
                minor,
                target_id,
                target_major if pinned else None,
                target_minor if pinned else None,
                rtype,
                author,
                when,
            ),
        )
