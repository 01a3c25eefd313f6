"""The local vault: a persistent server of the vault REST API (``create_app``)."""
