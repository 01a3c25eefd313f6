"""POSIX semantics over the vault, testable without a kernel: the file-system
operations, attributes, open handles, the status file and inode numbers."""
