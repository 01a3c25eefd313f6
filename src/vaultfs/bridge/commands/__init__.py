"""The bridge's commands: ``vaultfs mount``, ``umount``, ``status``, ``flush``, ``demo``,
``set-password``, ``install-helper`` and the ``mount.fuse.vaultfs`` helper; talking to a
running daemon from outside."""
