"""``cp`` of a big local file over a document's source file: check-out, upload, check-in.

cp opens the file with O_TRUNC (the mount checks the document out), writes into the
spool, and its close returns once the content is safe there; the upload and the
check-in follow in the background, and the run is timed until the vault has the new
draft and the lock is released (``settle``), as the reference's is. The reference
uploads the same amount of bytes as a new draft with curl. Every run writes different
bytes, since content equal to the latest version uploads nothing.
"""

from __future__ import annotations

import hashlib
import subprocess
import time
from pathlib import Path

from ..context import Context
from ..dataset import SEED, random_file
from ..measure import median, timed_run
from ..results import Aim, Row, throughput
from ..sizes import MiB

__all__ = ["run"]


def _md5(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "md5").hexdigest()


def _source_file(document_dir: Path) -> Path:
    """The document's latest source file: the one regular file of its directory."""
    (path,) = [p for p in document_dir.iterdir() if p.is_file()]
    return path


def run(ctx: Context) -> list[Row]:
    data, repeats, size = ctx.data, ctx.sizes.repeats, ctx.sizes.cp_bytes
    name = f"cp of a {size // MiB} MiB file over a document"
    curl, copies, calls = [], [], []
    for number in range(repeats):
        source = random_file(ctx.scratch(f"curl-{number}.bin"), size, SEED + 1000 + number)
        curl.append(ctx.vault.curl_upload_draft(data.cp_id, source))
        source.unlink()
    # Mounted after the uploads above, so its index knows the latest version.
    with ctx.mount() as mount:
        document_dir = mount.root / data.cp_path.parent
        for number in range(repeats):
            source = random_file(ctx.scratch(f"cp-{number}.bin"), size, SEED + 2000 + number)
            try:
                before = mount.api_calls()
                try:
                    started = time.perf_counter()
                    timed_run(["cp", str(source), str(_source_file(document_dir))])
                    # The check-in follows the last close: the save is done when the
                    # vault has it, as curl's upload is.
                    mount.settle()
                    copies.append(time.perf_counter() - started)
                except subprocess.CalledProcessError as exc:
                    reason = exc.stderr.decode(errors="replace").strip()
                    return [Row(name, f"not yet: cp failed: {reason}", "", None, Aim(True, 0.8))]
                calls.append(mount.api_calls() - before)
                checksum = ctx.vault.document(data.cp_id).get("md5checksum__v")
                if checksum != _md5(source):
                    raise RuntimeError(f"after cp the vault has checksum {checksum}, not ours")
            finally:
                source.unlink()
    return [
        Row(
            name,
            throughput(size, median(copies)),
            f"curl upload: {throughput(size, median(curl))}",
            median(curl) / median(copies),
            Aim(True, 0.8),
            f"{median(calls):.0f}",
        )
    ]
