"""The demo vault's metadata: the vault itself, its lifecycle (states, an approve state
change and a workflow, their entry requirements), three document types at different
depths with their fields, and the rendition, relationship and event types (the event
type with classifications and properties per subtype). Data, and the one function
that inserts it (``add_metadata``); ``demo.ensure_demo_vault`` calls it first.
"""

from __future__ import annotations

import json
import sqlite3

from .storage.fields import STANDARD_FIELDS, FieldSpec, field

__all__ = ["DEMO_VAULT_ID", "add_metadata"]

DEMO_VAULT_ID = 1

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


def add_metadata(conn: sqlite3.Connection) -> None:
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
