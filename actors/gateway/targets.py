"""Every SSH host this gateway links to is one of the state's ``sshTargets``.

``orca host add NAME ssh://…`` writes the host to ``remote-hosts.json`` (the client's
pin file: target and pinned server key, what the link is made from) and records it in
the store's state (seed 02 §2). When the store did not answer then (down, or
restarting), or the host predates ``sshTargets``, the state lacks it; the gateway,
which reads the pin file on every change, records each SSH host the state lacks as soon
as the store answers (``sshTarget.upsert``, id = label = the host's name). It only
adds: a target the state has and the pin file does not (another build's, or one
imported) is the user's and stays; ``orca host rm`` removes both.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

import trio

from orca.actor.client import RpcClient
from orca.contracts import NoArgs, store
from orca.remote.hosts import RemoteHost
from orca.wire.errors import OrcaError

log = logging.getLogger(__name__)

# A store that does not answer is asked again after this, doubled up to the cap.
RETRY_S = 0.5
RETRY_MAX_S = 8.0


class TargetRecorder:
    def __init__(self, connect: Callable[[str], RpcClient]) -> None:
        self._connect = connect
        self._hosts: dict[str, RemoteHost] = {}
        self._wake = trio.Event()
        # Hosts known to be in the state (cleared for one that leaves the pin file, so
        # one added again is looked for again).
        self.recorded: set[str] = set()

    def offer(self, hosts: Mapping[str, RemoteHost]) -> None:
        """The pin file as just read (``Follower``): record what the state lacks."""
        self._hosts = {name: host for name, host in hosts.items() if host.ssh is not None}
        self.recorded &= set(self._hosts)
        if set(self._hosts) - self.recorded:
            self._wake.set()

    async def run(self) -> None:
        delay = RETRY_S
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            try:
                await self._record()
            except OrcaError as exc:
                log.info("ssh targets not recorded yet (%s); again in %gs", exc.message, delay)
                await trio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)
                self._wake.set()  # what is still pending, again
                continue
            delay = RETRY_S

    async def _record(self) -> None:
        pending = {n: h for n, h in self._hosts.items() if n not in self.recorded}
        if not pending:
            return
        client = self._connect("store")
        listed = await client.invoke(store.SSH_TARGET_LIST, NoArgs())
        known = {t.id for t in listed.ssh_targets}
        for name, host in pending.items():
            record = host.target_record()
            if name not in known and record is not None:
                await client.invoke(store.SSH_TARGET_UPSERT, store.SshTargetArgs(ssh_target=record))
                log.info("ssh host %s recorded among the state's SSH targets", name)
            self.recorded.add(name)
