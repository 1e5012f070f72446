"""Which code a process runs: its build id and the cheap stamp that spares hashing it.

``build_id()`` is a hash of the ``orca`` and ``actors`` source a process imports from
(``sys.hello``'s ``build``, ``orca.contracts.sys``); a starter hands its build down to
the processes it starts (``BUILD_ENV``: ``starter_build``, ``adopt_build``). The
standard library only: the fd keeper answers ``hello`` with it and imports no msgspec.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path

# The top-level packages whose source makes up a build (``orca`` and the actors).
BUILD_PACKAGES = ("orca", "actors")
# Hex digits of the sha256 shown as a build id.
BUILD_ID_CHARS = 12


def source_build_id(roots: Iterable[Path]) -> str:
    """A hash of every ``*.py`` under ``roots`` (relative path and content, sorted): equal
    for the same code wherever it is installed, different once any source file changed."""
    import hashlib  # here, not at the top: every CLI command imports this module

    digest = hashlib.sha256()
    for root in roots:
        files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
        for path in files:
            try:
                data = path.read_bytes()
            except OSError:
                continue  # removed while we looked: not part of what runs
            rel = f"{root.name}/{path.relative_to(root).as_posix()}"
            digest.update(rel.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return digest.hexdigest()[:BUILD_ID_CHARS]


def package_roots() -> list[Path]:
    """Where the running ``orca`` and ``actors`` packages live (not imported here)."""
    import importlib.util

    roots: list[Path] = []
    for name in BUILD_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            roots.extend(Path(p) for p in spec.submodule_search_locations)
    return roots


def source_stamp(roots: Iterable[Path]) -> str:
    """A cheap fingerprint of the source under ``roots``: every ``*.py``'s path, size and
    mtime (about 1 ms for the tree, against ~10 ms to hash its content). Equal stamps
    mean the same files untouched since, so a reader holding a process's
    ``(stamp, build)`` pair can skip ``build_id``; any edit, install or move changes it."""
    import os
    import zlib  # built in, unlike hashlib: this runs on every ``orca status``

    entries: list[str] = []
    for root in roots:
        pending = [str(root)]
        while pending:
            try:
                with os.scandir(pending.pop()) as listing:
                    for entry in listing:
                        if entry.is_dir(follow_symlinks=False):
                            if entry.name != "__pycache__":
                                pending.append(entry.path)
                        elif entry.name.endswith(".py"):
                            st = entry.stat()
                            entries.append(f"{entry.path}\0{st.st_size}\0{st.st_mtime_ns}")
            except OSError:
                continue  # removed while we looked: not part of what runs
    entries.sort()
    return f"{zlib.crc32(chr(10).join(entries).encode(errors='surrogateescape')):08x}"


@functools.cache
def build_stamp() -> str:
    """``source_stamp`` of this process's packages, taken once."""
    return source_stamp(package_roots())


# A process that starts another from the same files may hand it its build in this
# variable, as ``<build_stamp>:<build_id>`` (``starter_build``, ``adopt_build``).
BUILD_ENV = "ORCA_STARTER_BUILD"
_adopted: list[str] = []


@functools.cache
def build_id() -> str:
    """This process's build: ``source_build_id`` of the packages it imports from, read
    once (the first call costs a few ms; an upgrade installed later shows as a
    different id in the processes started after it), or the starter's (``adopt_build``).
    The stamp is taken first, so a file edited while hashing leaves a stamp no later
    reader matches."""
    build_stamp()
    if _adopted:
        return _adopted[0]
    return source_build_id(package_roots())


def starter_build() -> str:
    """This process's build for a process it starts (``BUILD_ENV``'s value)."""
    return f"{build_stamp()}:{build_id()}"


def adopt_build(handed: str | None) -> bool:
    """Take the build a starter handed down (``starter_build``) if this process's files
    are the ones it hashed: the same stamp (paths, sizes, mtimes). Spares the hash and
    hashlib, whose OpenSSL was 4 MiB of the fd keeper's 22 (issue 36); files changed
    since, the build is hashed as before. Call before the first ``build_id``."""
    stamp, _, build = (handed or "").partition(":")
    if not build or stamp != build_stamp():
        return False
    _adopted[:] = [build]
    return True
