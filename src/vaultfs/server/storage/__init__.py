"""Storage of the local vault: SQLite records and the blob directory.

Storage functions take a sqlite3 connection, raise ``vaultfs.errors`` classes and
know nothing of HTTP. One module per area (documents, metadata, users, ...).
"""
