"""The mount daemon: the one builder of a mount, the FUSE layer (``fuse``, the only
importer of pyfuse3), signals, systemd notification and log format."""
