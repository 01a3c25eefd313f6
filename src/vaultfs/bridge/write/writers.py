"""Who writes one file now, and what the close of its last writer takes.

One rule for a document's source file (``editing``) and a scratch file (``scratch``)
alike: the content is taken (checked in, or made a new document) by the close of the
last writer, and only when something was written since it was last taken. A shell's
``>`` closes a duplicate descriptor, and a forked child its inherited one, before
anything is written; those closes take nothing.
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
    #: written (or truncated, other than by an open's O_TRUNC) since last taken
    written: bool = False
    #: held while the content is being taken or a writer is opening: an open that
    #: arrives during a take starts from what the take left
    lock: trio.Lock = field(default_factory=trio.Lock)

    def flush_takes(self) -> bool:
        """Whether a close (flush) of one of the writers takes the content now."""
        return self.written and self.count == 1
