"""Real processes for the tests and the benchmarks: a vault server
(``vault_process``), a mount (``mount_process``), a PostgreSQL cluster (``postgres``)
and an S3-compatible server (``s3_server``), each started on loopback, waited for with
a deadline and ended by PID.

Imported by ``tests/`` and ``bench/`` alike, so it never imports pytest, and like every
command that does not mount it never loads pyfuse3 (tests/ops/test_lazy_imports.py).
The modules are imported by name; this package re-exports nothing. They run in the
project's own environment (``./run``'s ``.[server,s3,test]``): ``postgres`` needs
psycopg and ``s3_server`` moto and boto3, which an install of the mount alone lacks.
"""
