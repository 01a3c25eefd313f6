"""Benchmarks of vaultfs: how close a mount comes to the limits of the machine.

``python -m bench`` (or ``./run bench``) builds a vault in a local vault server through
the REST API, mounts it, runs the workloads of ``bench.workloads`` and reports every
figure as a ratio against a reference measured in the same run on the same machine
(see docs/benchmarks.md). Nothing here is part of the test suite.
"""

__all__: list[str] = []
