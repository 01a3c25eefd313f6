"""A document's life beyond its content: lifecycle actions and distribution events.

``actions`` lists and starts lifecycle actions, ``principals`` turns user and group
names into the ``user:ID,group:ID`` lists actions take, ``events`` reads and logs
document events, ``states`` says which statuses are steady (read-only latest file),
and ``attributes`` is what the file system asks: the ``user.vault.actions``,
``user.vault.action``, ``user.vault.event`` and ``user.vault.last_error`` extended
attributes and the ``.events.jsonl`` file of each document directory.
"""
