"""``agent-hooks/endpoint.env``: where the hook script finds the running server.

Written atomically (0600) at every start with the port, the per-start secret and the
protocol version, so an agent that outlives an actor restart reaches the new server on
its next hook (the script re-reads the file on every call). ``KEY=value`` lines, one
per field, parseable by a POSIX ``read`` loop without evaluating anything.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from orca.fsio import write_atomic
from orca.hook_script import ENDPOINT_FILE_NAME as ENDPOINT_FILE_NAME  # one name: the script's

# Bumped when the request format the script sends changes meaning.
HOOK_PROTOCOL_VERSION = 1
# 32 random bytes: unguessable for the lifetime of one server.
SECRET_BYTES = 32


def new_secret() -> str:
    return secrets.token_hex(SECRET_BYTES)


def render_endpoint_env(port: int, secret: str) -> bytes:
    lines = [
        f"ORCA_HOOK_VERSION={HOOK_PROTOCOL_VERSION}",
        f"ORCA_HOOK_PORT={port}",
        f"ORCA_HOOK_SECRET={secret}",
        f"ORCA_HOOK_PID={os.getpid()}",
    ]
    return ("\n".join(lines) + "\n").encode()


def write_endpoint_env(hooks_dir: Path, port: int, secret: str) -> Path:
    path = hooks_dir / ENDPOINT_FILE_NAME
    write_atomic(path, render_endpoint_env(port, secret), private_parent=True)
    return path


def read_endpoint_env(path: Path) -> dict[str, str]:
    """The file's fields; empty when it is missing or unreadable."""
    try:
        text = path.read_text()
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.startswith("ORCA_HOOK_"):
            fields[key] = value
    return fields
