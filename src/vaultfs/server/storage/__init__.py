"""Storage of the local vault: database records (SQLite or PostgreSQL) and the blob directory.

Storage functions take a connection (``sql.Conn``), raise ``vaultfs.errors`` classes
and know nothing of HTTP. One module per area (documents, metadata, users, ...).
"""
