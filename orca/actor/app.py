"""``run_actor``: the life of one actor process.

1. set up logging (stderr; the supervisor files it into the actor's log),
2. create the RPC server and the event publisher, run the actor's ``setup`` (it
   registers ops, loads state, starts background tasks),
3. bind the endpoints (``ipc://`` in the runtime dir; ``tcp://`` too when
   ``ORCA_TCP_HOST`` names a loopback address; ``orca.actor.endpoints``, the one bind
   path, which orcad uses too),
4. only then report readiness to the supervisor (``sup.ready``) and start
   heartbeating (``sup.heartbeat``), so "ready" always means "requests will be served",
5. serve until SIGTERM/SIGINT, run the stop callbacks (bounded by a deadline), exit.

A ``setup`` that raises :class:`~orca.actor.context.Dormant` (allowed at orcad's first
start only: ``ActorContext.may_sleep``) ends the process with ``DORMANT_EXIT`` before
anything is bound; orcad starts it again when a client asks for it.

An actor watches its supervisor through a pidfd and stops gracefully (as on SIGTERM)
the moment the supervisor dies, so a killed ``orcad`` never leaves actors behind.
(Not PR_SET_PDEATHSIG: it fires when the *thread* that forked the child exits, and
trio spawns from worker threads that retire when idle, which SIGTERMed healthy actors.)
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Awaitable, Callable

import trio

from orca import __version__
from orca.actor import memory
from orca.actor.client import RpcClient
from orca.actor.context import ActorContext, Dormant
from orca.actor.endpoints import BadTcpHost, bind_endpoints, tcp_host_from_env
from orca.actor.publisher import EventPublisher
from orca.actor.rpc_server import RpcServer
from orca.build import build_id
from orca.contracts import supervisor as sup
from orca.contracts.supervisor import HEARTBEAT_ENV, SUPERVISOR_ENV, SUPERVISOR_PID_ENV
from orca.logs import configure_logging
from orca.paths import OrcaPaths, resolve_paths
from orca.wire.errors import OrcaError

log = logging.getLogger(__name__)

# Default heartbeat period when the supervisor does not say; its timeout is several
# periods so one slow tick never gets a healthy actor killed.
DEFAULT_HEARTBEAT_S = 1.0
# Upper bound on stop callbacks (flushes): the supervisor's grace is longer, so an
# actor finishes its own shutdown before it would be SIGKILLed.
STOP_CALLBACK_DEADLINE_S = 2.5

Setup = Callable[[ActorContext], Awaitable[None]]


def _log_to_own_file(path: os.PathLike[str]) -> None:
    """Send what the actor prints (stdout, stderr: its log) to ``path`` itself, appended
    (0600): the pipe orcad filed it from closed with orcad, and what the actor does on
    its way out (ptyd securing its terminals) is the part most worth reading."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return  # nowhere to write: the lines are lost, as they would be anyway
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
    except OSError:
        pass
    finally:
        os.close(fd)


async def _stop_when_supervisor_dies(log_path: os.PathLike[str]) -> None:
    """SIGTERM ourselves (the graceful path: stop callbacks, flush) when orcad exits;
    from then on the actor's log goes to its file directly (``_log_to_own_file``)."""
    parent = os.environ.get(SUPERVISOR_PID_ENV)
    if not parent:
        return
    pid = int(parent)
    try:
        pidfd = os.pidfd_open(pid)  # Linux >= 5.3, like ptyd's exit watches
    except OSError:
        pidfd = None
    if pidfd is not None and os.getppid() == pid:
        try:
            await trio.lowlevel.wait_readable(pidfd)  # readable once the process exited
        finally:
            trio.lowlevel.notify_closing(pidfd)
            os.close(pidfd)
    elif pidfd is not None:
        os.close(pidfd)  # the pid is not our parent any more: it died before we looked
    _log_to_own_file(log_path)
    log.warning("supervisor (pid %d) is gone: stopping", pid)
    os.kill(os.getpid(), signal.SIGTERM)


async def _supervisor_link(name: str, rpc: RpcServer, events: EventPublisher) -> None:
    endpoint = os.environ.get(SUPERVISOR_ENV)
    if not endpoint:
        return
    interval = float(os.environ.get(HEARTBEAT_ENV, DEFAULT_HEARTBEAT_S))
    client = RpcClient(endpoint, timeout=interval)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(client.run)
            ready = sup.ReadyArgs(
                name=name,
                pid=os.getpid(),
                rpc=rpc.endpoints,
                pub=events.endpoints,
                epoch=events.epoch,
                version=__version__,
                build=build_id(),
            )
            await client.invoke(sup.READY, ready, retries=10)
            alive = sup.HeartbeatArgs(name=name, pid=os.getpid())
            while True:
                await trio.sleep(interval)
                try:
                    await client.invoke(sup.HEARTBEAT, alive)
                except OrcaError as exc:  # the supervisor restarts or is busy: keep going
                    log.debug("heartbeat not acknowledged: %s", exc)
    finally:
        client.close()


async def serve_actor(name: str, setup: Setup, paths: OrcaPaths) -> None:
    """Run one actor inside the current trio run until SIGTERM/SIGINT.

    A refused ``ORCA_TCP_HOST`` raises ``BadTcpHost`` before anything is set up or bound.
    """
    tcp_host = tcp_host_from_env()
    rpc = RpcServer(name)
    events = EventPublisher(name)
    rpc.epoch = events.epoch
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            ctx = ActorContext(
                name=name,
                paths=paths,
                rpc=rpc,
                events=events,
                nursery=nursery,
                # Read and dropped: never handed on (ptyd's agents, gitwatch's git).
                may_sleep=os.environ.pop(sup.SLEEP_ENV, None) == "1",
            )
            try:
                try:
                    await setup(ctx)
                except Dormant as why:
                    log.info("%s: dormant until asked (%s)", name, why)
                    raise SystemExit(sup.DORMANT_EXIT) from None
                bind_endpoints(paths, name, rpc, events, tcp_host)
                await nursery.start(rpc.serve)
                nursery.start_soon(events.run_heartbeats)
                nursery.start_soon(_supervisor_link, name, rpc, events)
                nursery.start_soon(_stop_when_supervisor_dies, paths.log_file(name))
                log.info("%s ready on %s", name, ", ".join(rpc.endpoints))
                async for signum in signals:
                    log.info("%s stopping on %s", name, signal.Signals(signum).name)
                    break
                with trio.move_on_after(STOP_CALLBACK_DEADLINE_S) as scope:
                    for callback in ctx.stop_callbacks:
                        await callback()
                if scope.cancelled_caught:
                    log.error("%s: stop callbacks exceeded %ss", name, STOP_CALLBACK_DEADLINE_S)
                nursery.cancel_scope.cancel()
            finally:
                ctx.close_clients()
                rpc.close()
                events.close()


def run_actor(name: str, setup: Setup) -> None:
    """Entry point of an actor process (``python -m actors.<name>``)."""
    configure_logging(name)
    # A peer's large frame is given back when freed, not kept in the heap (issue 33).
    memory.keep_large_blocks_mapped()
    paths = resolve_paths().ensure()
    try:
        trio.run(serve_actor, name, setup, paths)
    except BadTcpHost as exc:
        raise SystemExit(f"{name}: {exc}") from None
    except BaseExceptionGroup as group:
        # A setup that refuses to start says why in one line (SystemExit with a
        # message), not as a traceback of the nursery it was raised in.
        refused = _only_exits(group)
        if refused is None:
            raise
        raise refused from None


def _only_exits(group: BaseExceptionGroup[BaseException]) -> SystemExit | None:
    """The first SystemExit of a group that holds nothing else, or None."""
    exits, rest = group.split(SystemExit)
    if exits is None or rest is not None:
        return None
    first: BaseException = exits
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return first if isinstance(first, SystemExit) else None
