"""SHA-256 for what a hook hashes (a transcript cursor's name, an entry's key, the secret scan
cache), without `hashlib`'s start: hashlib loads OpenSSL's library on import, a few
milliseconds of every Stop hook (docs/scaling.md), while CPython builds its own SHA-256 in.
The digests are the same; where the built-in one is missing (a build without it), hashlib's.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # the same function, as the type checker knows it
    from hashlib import sha256
else:
    try:
        if sys.version_info >= (3, 12):
            from _sha2 import sha256
        else:
            from _sha256 import sha256
    except ImportError:
        from hashlib import sha256

__all__ = ["sha256"]
