"""Changing the vault through the tree: check-out and check-in of edits, new and
renamed names, scratch files, new documents, field changes, and the durable spool."""
