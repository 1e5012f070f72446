"""The supervisor's wire contract (``orcad``; endpoint ``<runtime>/supervisor.rpc``).

Ops:
- ``sup.ready {name, pid, rpc, pub, epoch}`` → ``{}``: an actor has bound its sockets.
- ``sup.heartbeat {name, pid}`` → ``{known}``: liveness; ``known`` false for a stale pid.
- ``sup.status`` → ``{actors: [ActorStatus], supervisor: {...}}``.
- ``sup.restart {name}`` → ``{}``: operator restart; clears ``failed``. not_found: no such actor.
- ``sup.wait_ready {timeout?}`` → like ``sup.status`` once every actor is running;
  unavailable if the deadline passes first (long-poll, concurrent).
- ``sup.stop`` → ``{}`` after every actor has stopped, in reverse start order; orcad exits.
- ``sup.snapshot`` → ``{epoch, seq, actors}`` for mirrors of the events below.
- plus the built-ins ``sys.hello``, ``sys.ping``, ``sys.stats``.

ActorStatus: ``{name, module, pid, state, restarts, uptime, lastExit, rss}`` with
``state`` one of ``starting|running|backoff|failed|stopped``.

Events (topic = type): ``actor.<name>.started {name, pid, rpc, pub, epoch}``,
``actor.<name>.exited {name, pid, code, reason}``,
``actor.<name>.restarting {name, delayS, restarts, lastExit?}``,
``actor.<name>.failed {name, restarts, periodS, lastExit}``.
"""

from __future__ import annotations

import msgspec


class ReadyArgs(msgspec.Struct, frozen=True):
    name: str
    pid: int
    rpc: list[str] = []
    pub: list[str] = []
    epoch: str = ""


class HeartbeatArgs(msgspec.Struct, frozen=True):
    name: str
    pid: int


class RestartArgs(msgspec.Struct, frozen=True):
    name: str


class WaitReadyArgs(msgspec.Struct, frozen=True):
    timeout: float = 30.0


class NoArgs(msgspec.Struct, frozen=True):
    pass
