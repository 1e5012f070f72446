"""The supervisor's wire contract (``orcad``; endpoint ``<runtime>/supervisor.rpc``).

Ops (plus the built-ins ``sys.hello``, ``sys.ping``, ``sys.stats``):

- ``sup.ready {name, pid, rpc, pub, epoch, version, build}`` → ``{}``: an actor has
  bound its sockets (sent by the actor runtime, ``orca.actor.app``; ``version`` and
  ``build`` as in its ``sys.hello``, empty from an older runtime); a report from a pid
  orcad did not start, or from a child that is not starting, is ignored.
- ``sup.heartbeat {name, pid}`` → ``{known}``: liveness; ``known`` is false for a
  stale pid (the actor was replaced), which the actor may log and ignore.
- ``sup.status {}`` → ``Status {actors: [ActorStatus], supervisor: SupervisorInfo}``.
- ``sup.snapshot {}`` → ``Snapshot {epoch, seq, actors, supervisor}``: ``sup.status``
  with the publisher's epoch and seq, for mirrors of the events below.
- ``sup.restart {name}`` → ``{}``: operator restart; clears ``failed`` and the
  intensity window. not_found: no such actor; unavailable: orcad is stopping.
- ``sup.wait_ready {timeout = 30}`` → ``Status`` once every actor is running (or, if
  not permanent, has ended); timeout (an ``unavailable``) if ``timeout`` seconds pass
  first. A long poll, served concurrently.
- ``sup.stop {keepTerminals = false}`` → ``{}`` once every actor has stopped, in reverse
  start order; then orcad exits. Unless ``keepTerminals``, the fd keeper is stopped too
  (its PTY masters close: every terminal hangs up); with it the keeper stays, holding
  every terminal, and the next ``orca up`` re-adopts them. Served concurrently.
- ``sup.hand_over {}`` → ``HandOverReply {keeperPid, keeperBuild}`` once every actor has
  stopped, the keeper kept; then orcad exits. The first step of ``orca restart --all``
  (the CLI checks ``sys.hello``'s capabilities for it and refuses an orcad without it):
  ``sup.stop {keepTerminals: true}`` that refuses (unavailable, nothing stopped) unless
  a keeper answers, since without one the hand-over would end every terminal.

``ActorStatus``: ``{name, module, pid, state, restarts, uptime, lastExit, rss, log,
version, build, pss}`` (``version``/``build``: what the running process reported ready with,
null when none runs);
``state`` is one of ``starting|running|backoff|failed|stopped``; ``pid``, ``uptime``
(seconds since ready, while running), ``lastExit`` (``{code, reason}``), ``rss`` and
``pss`` (bytes; PSS counts the pages the actors share once across them) are null when they do not apply. ``log`` is null while orcad has written all of
the actor's output to its log file; once a write failed (a full disk: orcad drops the
lines and carries on, the actor never notices) it is ``LogHealth {droppedBytes,
droppedLines, error}``, ``error`` null again once writing works again.
``SupervisorInfo.version``/``build`` are orcad's own, ``keeperVersion``/``keeperBuild``
the keeper's (its ``hello``; null while none answers or from one that predates it).
``SupervisorInfo.pauses``/``pausedS``: how often (and how long in all) orcad itself was
not scheduled, e.g. SIGSTOPped; no actor is judged hung on that time.

Events (topic = type; the actor's name is in the data):

- ``actor.started {name, pid, rpc, pub, epoch}``: a child reported ready.
- ``actor.exited {name, pid, code, reason}``: a child's process ended (``code`` is
  its return code, negative for a signal; ``reason`` says why in words).
- ``actor.restarting {name, delayS, restarts, lastExit?, operator?}``: a restart is
  scheduled ``delayS`` from now (``operator`` true, and no ``lastExit``, for an operator
  restart of a child that was not running).
- ``actor.failed {name, restarts, periodS, lastExit}``: more than ``intensity``
  restarts within ``periodS``: the child is left alone until ``sup.restart``.
- ``actor.log_failing {name, error, droppedLines}``: orcad cannot write the actor's log
  (ENOSPC, EIO...): it drops the output (counted) and retries, the actor runs on.
- ``actor.log_recovered {name, droppedLines}``: the log is written again.

(Before issue 11 the type carried the actor's name, ``actor.<name>.started``; now
there is one fixed type per kind so one Struct decodes it.)

The instance lock file (``LockInfo``, ``read_lock_info``, ``read_abandoned_lock_info``),
the way orcad is started (``launch_orcad``) and the environment orcad gives its actors
are ``orca.contracts.orcad_lock``'s (the keeper reads and does them without importing
this module's msgspec); they are imported here too, for orcad and the CLI.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from orca.contracts.base import Args, Contract, NoArgs, Payload
from orca.contracts.orcad_lock import EXIT_ALREADY_RUNNING as EXIT_ALREADY_RUNNING
from orca.contracts.orcad_lock import HEARTBEAT_ENV as HEARTBEAT_ENV
from orca.contracts.orcad_lock import ORCAD_ARGV as ORCAD_ARGV
from orca.contracts.orcad_lock import ORCAD_MODULE as ORCAD_MODULE
from orca.contracts.orcad_lock import SUPERVISOR_ENV as SUPERVISOR_ENV
from orca.contracts.orcad_lock import SUPERVISOR_PID_ENV as SUPERVISOR_PID_ENV
from orca.contracts.orcad_lock import LockInfo as LockInfo
from orca.contracts.orcad_lock import decode_lock_info as decode_lock_info
from orca.contracts.orcad_lock import encode_lock_info as encode_lock_info
from orca.contracts.orcad_lock import launch_orcad as launch_orcad
from orca.contracts.orcad_lock import read_abandoned_lock_info as read_abandoned_lock_info
from orca.contracts.orcad_lock import read_lock_info as read_lock_info
from orca.wire.errors import NotFound, Timeout, Unavailable

ActorState = Literal["starting", "running", "backoff", "failed", "stopped", "dormant"]

# An actor orcad started with ``SLEEP_ENV`` set (its first start, at ``orca up``) that has
# nothing to do until asked (``orca.actor.app.Dormant``) exits with this status: orcad
# marks it ``dormant`` and starts it when a client asks for it (``sup.wake``).
DORMANT_EXIT = 75
SLEEP_ENV = "ORCA_MAY_SLEEP"


# -- args ---------------------------------------------------------------------------
class ReadyArgs(Args, frozen=True, kw_only=True):
    name: str
    pid: int
    rpc: list[str] = msgspec.field(default_factory=list)
    pub: list[str] = msgspec.field(default_factory=list)
    epoch: str = ""
    version: str = ""
    build: str = ""


class HeartbeatArgs(Args, frozen=True, kw_only=True):
    name: str
    pid: int


class RestartArgs(Args, frozen=True, kw_only=True):
    name: str


class WakeArgs(Args, frozen=True, kw_only=True):
    name: str
    # How long the caller waits for a dormant (or starting) actor to be ready.
    timeout: float = 30.0


class WaitReadyArgs(Args, frozen=True, kw_only=True):
    timeout: float = 30.0


# -- results ------------------------------------------------------------------------
class Empty(Payload, frozen=True, kw_only=True):
    """``{}``: the op was carried out."""


class HeartbeatReply(Payload, frozen=True, kw_only=True):
    known: bool


class ExitInfo(Payload, frozen=True, kw_only=True):
    """How a child's last process ended; ``code`` is null if it never started."""

    code: int | None
    reason: str


class LogHealth(Payload, frozen=True, kw_only=True):
    """An actor's log file could not be written (disk full, EIO): what orcad dropped.

    Counts are cumulative since orcad started; ``error`` is the current failure (null
    once writing works again)."""

    dropped_bytes: int
    dropped_lines: int
    error: str | None


class ActorStatus(Payload, frozen=True, kw_only=True):
    name: str
    module: str
    pid: int | None
    state: ActorState
    restarts: int
    uptime: float | None
    last_exit: ExitInfo | None
    rss: int | None = None
    log: LogHealth | None = None
    version: str | None = None
    build: str | None = None
    # Its proportional share of the memory it holds (bytes): pages shared with the other
    # actors (forked from one image) counted once across them.
    pss: int | None = None


class StopArgs(Payload, frozen=True, kw_only=True):
    # True: leave the fd keeper (and so every terminal) running for the next `orca up`.
    keep_terminals: bool = False


class SupervisorInfo(Payload, frozen=True, kw_only=True):
    pid: int
    uptime: float
    home: str | None
    endpoint: str
    endpoints: list[str]
    strategy: str
    stopping: bool
    # Times orcad itself was not scheduled (SIGSTOP, a frozen cgroup) for longer than two
    # check-in steps, and their total seconds: liveness clocks were moved past them.
    pauses: int = 0
    paused_s: float = 0.0
    # The fd keeper's pid (``actors/keeper``), null while none answers.
    keeper_pid: int | None = None
    version: str | None = None
    build: str | None = None
    # ``orca.build.build_stamp`` as orcad took it with ``build``: a reader whose
    # own stamp is equal knows the installed build without hashing the source.
    build_stamp: str | None = None
    keeper_version: str | None = None
    keeper_build: str | None = None
    # The fork server the actors are forked from (``actors/supervisor/forkserver.py``);
    # null while there is none (then each actor starts as a fresh interpreter).
    forkserver_pid: int | None = None


class HandOverReply(Payload, frozen=True, kw_only=True):
    """The keeper left holding every terminal for the next tree."""

    keeper_pid: int | None
    keeper_build: str | None = None


class Status(Payload, frozen=True, kw_only=True):
    actors: list[ActorStatus]
    supervisor: SupervisorInfo


class Snapshot(Status, frozen=True, kw_only=True):
    epoch: str
    seq: int


# -- events -------------------------------------------------------------------------
class ActorStarted(Payload, frozen=True, kw_only=True):
    name: str
    pid: int
    rpc: list[str]
    pub: list[str]
    epoch: str


class ActorExited(Payload, frozen=True, kw_only=True):
    name: str
    pid: int
    code: int
    reason: str


class ActorRestarting(Payload, frozen=True, kw_only=True, omit_defaults=True):
    name: str
    delay_s: float
    restarts: int
    last_exit: ExitInfo | None = None
    operator: bool = False


class ActorFailed(Payload, frozen=True, kw_only=True):
    name: str
    restarts: int
    period_s: float
    last_exit: ExitInfo


class ActorLogFailing(Payload, frozen=True, kw_only=True):
    name: str
    error: str
    dropped_lines: int


class ActorLogRecovered(Payload, frozen=True, kw_only=True):
    name: str
    dropped_lines: int


ActorEvent = (
    ActorStarted | ActorExited | ActorRestarting | ActorFailed | ActorLogFailing | ActorLogRecovered
)

CONTRACT = Contract("supervisor")
READY = CONTRACT.op("sup.ready", ReadyArgs, Empty, doc="an actor has bound its sockets")
HEARTBEAT = CONTRACT.op("sup.heartbeat", HeartbeatArgs, HeartbeatReply, doc="liveness")
STATUS = CONTRACT.op("sup.status", NoArgs, Status, doc="every actor's state")
SNAPSHOT = CONTRACT.op("sup.snapshot", NoArgs, Snapshot, doc="status for event mirrors")
RESTART = CONTRACT.op(
    "sup.restart", RestartArgs, Empty, NotFound, Unavailable, doc="operator restart"
)
WAKE = CONTRACT.op(
    "sup.wake",
    WakeArgs,
    ActorStatus,
    NotFound,
    Unavailable,
    Timeout,
    doc="start a dormant actor (a client asks for it); its status once ready",
)
WAIT_READY = CONTRACT.op(
    "sup.wait_ready", WaitReadyArgs, Status, Timeout, doc="long-poll until every actor is ready"
)
STOP = CONTRACT.op("sup.stop", StopArgs, Empty, doc="stop every actor, then orcad")
HAND_OVER = CONTRACT.op(
    "sup.hand_over",
    NoArgs,
    HandOverReply,
    Unavailable,
    doc="stop every actor and orcad, the keeper kept (orca restart --all)",
)

STARTED = CONTRACT.event("actor.started", ActorStarted, doc="a child reported ready")
EXITED = CONTRACT.event("actor.exited", ActorExited, doc="a child's process ended")
RESTARTING = CONTRACT.event("actor.restarting", ActorRestarting, doc="a restart is scheduled")
FAILED = CONTRACT.event("actor.failed", ActorFailed, doc="intensity exceeded: left alone")
LOG_FAILING = CONTRACT.event(
    "actor.log_failing", ActorLogFailing, doc="an actor's log cannot be written: lines dropped"
)
LOG_RECOVERED = CONTRACT.event(
    "actor.log_recovered", ActorLogRecovered, doc="an actor's log is written again"
)
