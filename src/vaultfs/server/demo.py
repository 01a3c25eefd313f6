"""The demo vault: what an empty data directory is filled with on first start.

One vault with three users (admin, editor, viewer) who sign in with a password, a
fourth (``sso@vaultfs.demo``, an editor) who has no usable password and signs in through
an identity provider when the data directory has an OAuth profile for them (``vaultfs
demo`` writes one; see docs/user-guide.md), and a group (Approvers: the editor),
three document types at different depths, a lifecycle with an approve state
change and a workflow, rendition, relationship and event types (with classifications
and properties per event subtype), and about twenty documents with several versions,
real files of several formats, viewable renditions, a few attachments and three
relationships (one to a version of its target). Some names
are awkward on purpose (a ``/``, unicode, two documents with the same name).

Everything is created in one transaction: a crash during the first start leaves an
empty database, filled again at the next start.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .config import ServerConfig
from .samples import docx_bytes, pdf_bytes, png_bytes
from .storage import attachments, changes, groups, renditions, search, users
from .storage.content import ContentStore, StoredFile
from .storage.db import Database, now_ms
from .storage.fields import STANDARD_FIELDS, FieldSpec, field

__all__ = ["DEMO_SSO_USER", "DEMO_USERS", "ensure_demo_vault", "referenced_blobs"]

DEMO_VAULT_ID = 1
#: (user name, display name, role)
DEMO_USERS = [
    ("admin@vaultfs.demo", "Ada Admin", "admin"),
    ("editor@vaultfs.demo", "Eddie Editor", "editor"),
    ("viewer@vaultfs.demo", "Vera Viewer", "viewer"),
]
#: (user name, display name, role) of the demo user who signs in through single
#: sign-on: their vault password is random and kept nowhere
DEMO_SSO_USER = ("sso@vaultfs.demo", "Sam Sso", "editor")
_DAY_MS = 86_400_000

# (name, label, level, parent, name_default, lifecycles)
_TYPES = [
    ("general__c", "General", "type", None, "{filename}", ["general_lifecycle__c"]),
    ("promotional_piece__c", "Promotional Piece", "type", None, None, ["general_lifecycle__c"]),
    ("advertisement__c", "Advertisement", "subtype", "promotional_piece__c", None, []),
    ("brochure__c", "Brochure", "subtype", "promotional_piece__c", None, []),
    ("clinical__c", "Clinical", "type", None, None, ["general_lifecycle__c"]),
    ("protocol__c", "Protocol", "subtype", "clinical__c", None, []),
    ("final_protocol__c", "Final Protocol", "classification", "protocol__c", None, []),
    ("amendment__c", "Amendment", "classification", "protocol__c", None, []),
]

#: Vault-specific fields and the level that defines them.
_CUSTOM_FIELDS: list[tuple[FieldSpec, str]] = [
    (
        field(
            "audience__c",
            "Audience",
            "Picklist",
            entries=["Healthcare Professional", "Patient"],
            default=["Healthcare Professional"],
        ),
        "promotional_piece__c",
    ),
    (field("study_number__c", "Study Number", required=True, max_length=20), "clinical__c"),
    (field("amendment_number__c", "Amendment Number", "Number"), "amendment__c"),
]


def _entry(name: str, description: str, type_: str, scope: str, **extra: object) -> str:
    return json.dumps(
        {
            "name": name,
            "description": description,
            "type": [type_],
            "required": True,
            "editable": True,
            "repeating": False,
            "scope": scope,
            **extra,
        }
    )


def _metadata(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO vaults (id, name, dns) VALUES (?, ?, ?)",
        (DEMO_VAULT_ID, "vaultfs Demo Vault", "localhost"),
    )
    conn.execute("INSERT INTO lifecycles VALUES ('general_lifecycle__c', 'General Lifecycle')")
    conn.executemany(
        "INSERT INTO lifecycle_states VALUES ('general_lifecycle__c', ?, ?, ?)",
        [
            ("draft__c", "Draft", 0),
            ("in_review__c", "In Review", 1),
            ("approved__c", "Approved", 2),
        ],
    )
    conn.executemany(
        "INSERT INTO lifecycle_actions VALUES ('general_lifecycle__c', ?, ?, ?, ?, ?)",
        [
            ("draft__c", "approve", "Approve", "stateChange", "approved__c"),
            ("draft__c", "startApproval", "Start Approval", "workflow", "in_review__c"),
        ],
    )
    conn.executemany(
        "INSERT INTO entry_requirements VALUES ('general_lifecycle__c', ?, ?, ?, ?)",
        [
            (
                "approve",
                "country__v",
                0,
                _entry(
                    "country__v",
                    "Country",
                    "ObjectReference",
                    "Document",
                    repeating=True,
                    objectTypeReferenced={"name": "country__v", "label": "Country"},
                ),
            ),
            (
                "startApproval",
                "dueDate",
                0,
                _entry("dueDate", "Due Date", "Date", "WorkflowActivation"),
            ),
            (
                "startApproval",
                "Approver",
                1,
                _entry(
                    "Approver",
                    "Approver",
                    "ObjectReference",
                    "WorkflowActivation",
                    objectTypeReferenced={"name": "user__sys", "label": "User"},
                ),
            ),
        ],
    )
    for position, (name, label, level, parent, name_default, lifecycles) in enumerate(_TYPES):
        conn.execute(
            "INSERT INTO doc_types (name, label, level, parent, position, name_default,"
            " lifecycles) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (name, label, level, parent, position, name_default, json.dumps(lifecycles)),
        )
    specs = [(spec, None) for spec in STANDARD_FIELDS] + _CUSTOM_FIELDS
    conn.executemany(
        "INSERT INTO doc_fields (name, position, defined_in, spec) VALUES (?, ?, ?, ?)",
        [(spec["name"], pos, where, json.dumps(spec)) for pos, (spec, where) in enumerate(specs)],
    )
    conn.executemany(
        "INSERT INTO rendition_types VALUES (?, ?, ?)",
        [
            ("viewable_rendition__v", "Viewable Rendition", 0),
            ("imported_rendition__c", "Imported Rendition", 1),
            ("custom_rendition__c", "Custom Rendition", 2),
        ],
    )
    # (name, label, system, single use, target version specific, target types)
    relationship_types = [
        ("crosslink_document_latest__v", "CrossLink (latest)", True, False, False, []),
        (
            "crosslink_document_latest_steady_state__v",
            "CrossLink (steady state)",
            True,
            False,
            False,
            [],
        ),
        ("crosslink_document_static__v", "CrossLink (static)", True, False, True, []),
        ("references__vs", "References", False, False, False, []),
        ("basedon__vs", "Based On", False, False, True, [("clinical__c", "Clinical")]),
        ("original_source__v", "Original Source", True, True, False, []),
    ]
    conn.executemany(
        "INSERT INTO relationship_types VALUES (?, ?, ?)",
        [
            (
                name,
                pos,
                json.dumps(
                    {
                        "value": name,
                        "label": label,
                        "sourceDocVersionSpecific": False,
                        "targetDocVersionSpecific": version_specific,
                        "system": system,
                        "singleUse": single_use,
                        "targetDocumentTypes": [{"label": t, "value": v} for v, t in targets],
                    }
                ),
            )
            for pos, (name, label, system, single_use, version_specific, targets) in enumerate(
                relationship_types
            )
        ],
    )
    conn.execute(
        "INSERT INTO event_types VALUES (?, ?, ?)",
        ("distribution__v", 0, json.dumps(_DISTRIBUTION)),
    )


def _event_property(name: str, label: str, type_: str, required: bool = False) -> dict[str, object]:
    return {"name": name, "label": label, "type": type_, "required": required}


#: The event type of the spec, with classifications and properties per subtype.
_DISTRIBUTION = {
    "name": "distribution__v",
    "label": "Distribution",
    "subtypes": [
        {
            "name": "approved_email__v",
            "label": "Approved Email",
            "classifications": [
                {"name": "sent__v", "label": "Sent"},
                {"name": "opened__v", "label": "Opened"},
                {"name": "clicked__v", "label": "Clicked"},
            ],
            "properties": [
                _event_property("recipient_email__v", "Recipient Email", "String", True),
                _event_property("template_name__v", "Template Name", "String"),
            ],
        },
        {
            "name": "controlled_copy__v",
            "label": "Controlled Copy",
            "classifications": [
                {"name": "issued__v", "label": "Issued"},
                {"name": "reconciled__v", "label": "Reconciled"},
            ],
            "properties": [
                _event_property("copy_number__v", "Copy Number", "Number", True),
                _event_property("recipient_name__v", "Recipient Name", "String"),
                _event_property("due_date__v", "Due Date", "Date"),
            ],
        },
        {
            "name": "irep__v",
            "label": "CRM",
            "classifications": [
                {"name": "presented__v", "label": "Presented"},
                {"name": "downloaded__v", "label": "Downloaded"},
            ],
            "properties": [
                _event_property("account_id__v", "Account", "String", True),
                _event_property("duration__v", "Duration (s)", "Number"),
                _event_property("key_message__v", "Key Message", "Boolean"),
            ],
        },
        {
            "name": "engage__v",
            "label": "Engage",
            "classifications": [{"name": "viewed__v", "label": "Viewed"}],
            "properties": [_event_property("meeting_id__v", "Meeting", "String", True)],
        },
    ],
}


# --- documents ------------------------------------------------------------------------


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


def _documents(
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
        clock += _DAY_MS // 7
        doc_id = changes.create_document(
            conn,
            author,
            form,
            store(_content(doc, number, first_major, first_minor), filename),
            clock,
        )
        for major, minor in doc.versions[1:]:
            clock += _DAY_MS // 7
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


def _relationships(conn: sqlite3.Connection, author: int, when: int) -> None:
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


def referenced_blobs(conn: sqlite3.Connection) -> set[str]:
    """Every blob a record points at (what the startup sweep keeps)."""
    rows = conn.execute(
        "SELECT blob FROM versions WHERE blob IS NOT NULL UNION SELECT blob FROM renditions"
        " UNION SELECT blob FROM attachment_versions"
    ).fetchall()
    return {r[0] for r in rows}


def _password(config: ServerConfig) -> str:
    """The demo password: configured, or generated and kept in a 0600 file, whose path
    is printed (never the password: the output usually ends up in a log file)."""
    if config.demo_password:
        return config.demo_password
    password = secrets.token_urlsafe(12)
    path: Path = config.data_dir / "demo-credentials"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write("".join(f"{name}\t{password}\n" for name, _, _ in DEMO_USERS))
    print(
        f"Demo vault created. Users {', '.join(n for n, _, _ in DEMO_USERS)}; "
        f"their password is in {path} (mode 0600)",
        flush=True,
    )
    return password


def ensure_demo_vault(db: Database, blobs: ContentStore, config: ServerConfig) -> bool:
    """Fill an empty database with the demo vault (blocking); False when not empty."""
    if db.read_sync(lambda conn: conn.execute("SELECT count(*) FROM vaults").fetchone()[0]):
        return False
    password = _password(config)

    texts: dict[str, str | None] = {}

    def store(data: bytes, filename: str) -> StoredFile:
        stored = StoredFile(blob=blobs.put_bytes(data), filename=filename)
        texts[stored.blob.sha256] = search.extract_text(data, filename)
        return stored

    def fill(conn: sqlite3.Connection) -> None:
        _metadata(conn)
        people: dict[str, users.SessionUser] = {}
        for username, display, role in DEMO_USERS:
            user_id = users.add_user(conn, username, display, password, role, [DEMO_VAULT_ID])
            people[role] = users.SessionUser(
                users.User(user_id, username, display, role), DEMO_VAULT_ID, "", 0
            )
        sso_name, sso_display, sso_role = DEMO_SSO_USER
        users.add_user(
            conn, sso_name, sso_display, secrets.token_urlsafe(32), sso_role, [DEMO_VAULT_ID]
        )
        groups.create_group(
            conn,
            DEMO_VAULT_ID,
            {"label__v": "Approvers", "members__v": str(people["editor"].user.id)},
        )
        _documents(conn, store, people, now_ms() - 30 * _DAY_MS)
        _relationships(conn, people["editor"].user.id, now_ms() - _DAY_MS)
        for sha256, text in texts.items():
            search.index_text(conn, sha256, text)

    db.write_sync(fill)
    return True
