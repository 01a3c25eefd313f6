"""``python -m vaultfs`` is the ``vaultfs`` command."""

from vaultfs.cli import main

raise SystemExit(main())
