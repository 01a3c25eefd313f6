"""The durable write-back spool: its behaviour (``spool``) and its files (``store``)."""
