"""SHA-256 from CPython's own module where it has one (``_sha256``; ``_sha2`` from 3.12):
``hashlib`` loads OpenSSL's libcrypto, 4 MiB of a small process's memory (the fd
keeper's, issue 36), for a digest of a few bytes. The digest is the same either way."""

from __future__ import annotations

import importlib

_BUILTIN = ("_sha2", "_sha256")


def sha256_hex(data: bytes) -> str:
    """The hex SHA-256 of ``data``, without loading OpenSSL where CPython can."""
    for name in _BUILTIN:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        return str(module.sha256(data).hexdigest())
    import hashlib

    return hashlib.sha256(data).hexdigest()
