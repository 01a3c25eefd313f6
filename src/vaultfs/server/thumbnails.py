"""Version thumbnails: a generated placeholder PNG whose colour tells the file format.

The local vault does not render pages; every version of one format shares one small
image (cached per process).
"""

from __future__ import annotations

from functools import lru_cache

from .samples import png_bytes

__all__ = ["thumbnail_png"]

_COLOURS = {
    "application/pdf": (200, 60, 50),
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": (50, 90, 200),
    "text/csv": (40, 160, 80),
    "text/plain": (150, 150, 150),
    "text/markdown": (120, 120, 170),
    "image/png": (220, 160, 40),
}


@lru_cache(maxsize=32)
def thumbnail_png(media_type: str) -> bytes:
    return png_bytes(64, 84, _COLOURS.get(media_type, (110, 110, 110)), border=3)
