"""The mount daemon, the FUSE front beside the WebDAV one on the core (``bridge.core``):
running a mount, the FUSE layer (``fuse``, the only importer of pyfuse3), signals,
systemd notification and log format."""
