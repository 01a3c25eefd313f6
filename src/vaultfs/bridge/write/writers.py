"""Who writes one file now: the count of its open writers and the lock of its take.

One rule for a document's source file (``editing``) and a scratch file (``scratch``)
alike: the content is taken (checked in, or made a new document) by the release of the
last writer, never by a close (flush) before it. A shell's ``{ a; b; } > file`` closes
the descriptor once per child, and ``exec 3>>file`` keeps it across many commands:
only the release says the open file is gone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

__all__ = ["Writers"]


@dataclass
class Writers:
    #: open writers: counted from the moment an open starts (before it waits for
    #: anything) until its release, so a close racing with an open never takes the
    #: content from under the opener
    count: int = 0
    #: held while the content is being taken or a writer is opening: an open that
    #: arrives during a take starts from what the take left
    lock: trio.Lock = field(default_factory=trio.Lock)
