"""``agent-hooks/endpoint.env``: where the hook script finds the running server.

Written atomically (0600) at every start with the port, the per-start secret and the
protocol version, so an agent that outlives an actor restart reaches the new server on
its next hook (the script re-reads the file on every call). ``KEY=value`` lines, one
per field, parseable by a POSIX ``read`` loop without evaluating anything.

A disk that refuses the file (ENOSPC, EIO..., issue 16 item 5) must not stop the actor:
:class:`EndpointPublisher` removes the previous start's file (its port and secret are
dead, and the port may since belong to someone else), reports the failure in its
:class:`~actors.hooks.persistence.WriteHealth` (``sys.stats`` → ``hooks.endpointFile``)
and retries every ``ENDPOINT_RETRY_S`` until the file is written. Meanwhile hooks fail
fast in the script (no endpoint), as they do while the actor is down.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
from pathlib import Path

import trio

from actors.hooks.persistence import WriteFn, WriteHealth, describe_os_error, write_private
from orca.hook_script import ENDPOINT_FILE_NAME as ENDPOINT_FILE_NAME  # one name: the script's

# Bumped when the request format the script sends changes meaning.
HOOK_PROTOCOL_VERSION = 1
# 32 random bytes: unguessable for the lifetime of one server.
SECRET_BYTES = 32
# An agent's hooks are lost while the file is missing: retry about as often as the
# status file's saver does (and as cheaply: one small write).
ENDPOINT_RETRY_S = 2.0

log = logging.getLogger(__name__)


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
    """Write the file (raises ``OSError``); the actor uses :class:`EndpointPublisher`."""
    path = hooks_dir / ENDPOINT_FILE_NAME
    write_private(path, render_endpoint_env(port, secret))
    return path


class EndpointPublisher:
    """Writes ``endpoint.env`` for this start, degrading on a refused write.

    Call :meth:`publish` once the port is known, then run :meth:`run` in a nursery: it
    returns once the file is written (at once if ``publish`` succeeded).
    """

    def __init__(
        self,
        hooks_dir: Path,
        port: int,
        secret: str,
        *,
        retry_s: float = ENDPOINT_RETRY_S,
        write: WriteFn = write_private,
    ) -> None:
        self.path = hooks_dir / ENDPOINT_FILE_NAME
        self._data = render_endpoint_env(port, secret)
        self._retry_s = retry_s
        self._write = write
        self.health = WriteHealth()

    @property
    def published(self) -> bool:
        return self.health.writes > 0

    def publish(self) -> bool:
        """One attempt; ``False`` (logged once per streak, never raised) if refused."""
        try:
            self._write(self.path, self._data)
        except OSError as exc:
            if self.health.failed(exc):
                # A stale file would send agents' secrets to a dead (or reused) port.
                with contextlib.suppress(OSError):
                    self.path.unlink()
                log.warning(
                    "cannot write %s (%s): hooks cannot reach this server; retrying every %gs",
                    self.path,
                    describe_os_error(exc),
                    self._retry_s,
                )
            return False
        if self.health.degraded:
            log.info("wrote %s after %d failures", self.path, self.health.failures)
        self.health.succeeded()
        return True

    async def run(self) -> None:
        while not self.published:
            await trio.sleep(self._retry_s)
            await trio.to_thread.run_sync(self.publish)


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
