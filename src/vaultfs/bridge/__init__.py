"""The bridge: a vault shown as a POSIX tree through FUSE."""
