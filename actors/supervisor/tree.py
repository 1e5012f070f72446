"""The supervisor's trio shell: processes, pipes, timers and sockets around ``core``.

Everything that decides lives in ``SupervisorCore``; this module spawns what it says to
spawn, signals what it says to signal, and reports back what the kernel tells us.
Children run in their own session (``start_new_session``) so a process group is one
actor and everything it forked: SIGTERM/SIGKILL go to the group, and nothing an actor
started can outlive a stop.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import trio
import trio.lowlevel

from actors.supervisor.config import ChildSpec, SupervisorSpec
from actors.supervisor.core import Effect, Kill, Publish, Spawn, SupervisorCore, Terminate
from actors.supervisor.forks import ForkServer, ForkServerGone, wait_for_exit, wanted
from actors.supervisor.keeper import KeeperControl, KeeperStartFailed, become_subreaper
from actors.supervisor.leftovers import LEFTOVER_WAIT_S, wait_for_leftover_actors
from actors.supervisor.logs import RotatingLog
from orca import __version__
from orca.actor.endpoints import TCP_HOST_ENV, bind_endpoints
from orca.actor.publisher import EventPublisher
from orca.actor.rpc_server import RpcServer
from orca.build import build_id, build_stamp, package_roots, source_stamp
from orca.client.keeper import keeper_answers, keeper_hello
from orca.contracts import supervisor as sup
from orca.contracts.base import NoArgs, Op, spec_of
from orca.contracts.fd_keeper import KEEPER_ENV, KeeperHello
from orca.contracts.supervisor import HEARTBEAT_ENV, SUPERVISOR_ENV, SUPERVISOR_PID_ENV
from orca.paths import OrcaPaths
from orca.user_env import UNBUFFERED_SET_ENV
from orca.wire.errors import NotFound, Timeout, Unavailable

log = logging.getLogger(__name__)

# Bytes read from an actor's output pipe at a time.
LOG_CHUNK = 65536

# A started actor: its pid, its output, and what waits for its exit code.
_Started = tuple[int, trio.abc.ReceiveStream, Callable[[], Awaitable[int]]]


def _pss(pid: int) -> int | None:
    """The process's proportional set size in bytes (``smaps_rollup``), None if unread."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


class Supervisor:
    def __init__(
        self,
        paths: OrcaPaths,
        spec: SupervisorSpec,
        preforked: tuple[int, socket.socket] | None = None,
    ) -> None:
        """``preforked``: the fork server orcad forked from itself (``forks.prefork``)."""
        self.paths = paths
        self.spec = spec
        self.preforked = preforked
        self.core = SupervisorCore(spec)
        self.rpc = RpcServer("supervisor")
        self.events = EventPublisher("supervisor")
        self.rpc.epoch = self.events.epoch
        self.started_at = time.monotonic()
        self._wake = trio.Event()
        self._changed = trio.Condition()
        self._exit_events: dict[int, trio.Event] = {}
        self._logs: dict[str, RotatingLog] = {}
        self._log_failing: dict[str, bool] = {}  # the log health last published, per actor
        self._stopped = trio.Event()
        self._stop_requested = trio.Event()
        self._nursery: trio.Nursery | None = None
        self.endpoint = paths.ipc_endpoint("supervisor", "rpc")
        self._spawning = 0
        self._sigchld = trio.Event()
        # The fd keeper is a process of its own (actors/keeper): orcad starts it if none
        # answers, restarts it, and reaps the agents orphaned by a ptyd crash.
        self.keeper = KeeperControl(paths, self._may_be_actor)
        # Actors forked from one preloaded image (forkserver.py): their pages shared.
        self.forks = ForkServer()
        self._keep_terminals = False
        self._register_ops()

    def _may_be_actor(self, pid: int) -> bool:
        """Whether ``pid`` may be one of our actors (which trio waits for, not the reaper).

        While a spawn is in flight its pid is not known yet, so every child counts.
        """
        return self._spawning > 0 or pid in self._exit_events or pid == self.forks.pid

    # -- effects --------------------------------------------------------------------
    def _carry_out(self, effects: list[Effect], *, from_timer: bool = False) -> None:
        """Carry out ``effects``; wake the timer loop, since deadlines may have moved."""
        if not effects:
            return
        assert self._nursery is not None
        for effect in effects:
            if isinstance(effect, Spawn):
                self._nursery.start_soon(self._run_child, effect.name, effect.may_sleep)
            elif isinstance(effect, Terminate):
                self._nursery.start_soon(self._terminate, effect.pid, effect.grace)
            elif isinstance(effect, Kill):
                log.warning("killing %s (pid %d)", effect.name, effect.pid)
                _signal_group(effect.pid, signal.SIGKILL)
            elif isinstance(effect, Publish):
                seq = self.events.emit(effect.event)
                log.info("%s #%d %s", spec_of(effect.event).type, seq, effect.event)
        if not from_timer:  # the timer loop recomputes its deadline itself
            self._wake.set()
        self._nursery.start_soon(self._notify)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def _child_env(self, name: str, may_sleep: bool = False) -> dict[str, str]:
        env = dict(os.environ)
        env.pop(sup.SLEEP_ENV, None)
        if may_sleep:
            env[sup.SLEEP_ENV] = "1"
        env.update(
            {
                SUPERVISOR_ENV: self.endpoint,
                SUPERVISOR_PID_ENV: str(os.getpid()),
                HEARTBEAT_ENV: str(self.spec.heartbeat_interval_s),
                "ORCA_ACTOR_NAME": name,
                KEEPER_ENV: self.keeper.path,
            }
        )
        if "PYTHONUNBUFFERED" not in env:  # actors' logs unbuffered; agents not (ptyd drops it)
            env["PYTHONUNBUFFERED"] = "1"
            env[UNBUFFERED_SET_ENV] = "1"
        if self.paths.home is not None:
            env["ORCA_HOME"] = str(self.paths.home)
        if self.spec.tcp_host:
            env[TCP_HOST_ENV] = self.spec.tcp_host
        else:
            env.pop(TCP_HOST_ENV, None)
        return env

    def _log_for(self, name: str) -> RotatingLog:
        if name not in self._logs:
            self._logs[name] = RotatingLog(
                self.paths.log_file(name), self.spec.log_max_bytes, self.spec.log_backups
            )
        return self._logs[name]

    async def _pump_output(self, name: str, stream: trio.abc.ReceiveStream) -> None:
        """Copy the child's output into its log until the pipe closes. A log that cannot
        be written drops the output (``RotatingLog``), but the pipe is always drained, so
        a full disk never blocks an actor on its own stderr."""
        logfile = self._log_for(name)
        async with stream:
            while chunk := await stream.receive_some(LOG_CHUNK):
                logfile.write(chunk)
                # Announce each change of the log's health once (across the child's restarts).
                failing = logfile.error is not None
                if failing != self._log_failing.get(name, False):
                    self._log_failing[name] = failing
                    self._carry_out(
                        self.core.log_failing(name, logfile.error, logfile.dropped_lines)
                        if logfile.error is not None
                        else self.core.log_recovered(name, logfile.dropped_lines)
                    )

    async def _run_child(self, name: str, may_sleep: bool = False) -> None:
        child = self.spec.child(name)
        env = self._child_env(name, may_sleep)
        self._spawning += 1  # until its pid is known: the reaper leaves every child alone
        try:
            started = await self._fork_child(child, env) or await self._exec_child(child, env)
            if started is None:
                return
            pid, output, wait = started
            exited = self._exit_events[pid] = trio.Event()
        finally:
            self._spawning -= 1
        self._carry_out(self.core.spawned(name, pid, time.monotonic()))
        assert self._nursery is not None
        self._nursery.start_soon(self._pump_output, name, output)
        try:
            returncode = await wait()
        finally:
            # Whatever the actor forked into its group goes with it.
            _signal_group(pid, signal.SIGKILL)
            exited.set()
            self._exit_events.pop(pid, None)
        self._carry_out(self.core.exited(name, pid, returncode, time.monotonic()))

    async def _fork_child(self, child: ChildSpec, env: dict[str, str]) -> _Started | None:
        """The actor forked from the preloaded image; None when there is none to ask."""
        if not self.forks.ready:
            return None
        if source_stamp(package_roots()) != self.forks.stamp:
            # The code on disk changed since the image was loaded (an upgrade): a
            # restarted actor runs what is installed now, as it always did.
            log.info(
                "the source changed since the fork server loaded it: %s starts fresh", child.name
            )
            return None
        try:
            pid, read_end = await self.forks.spawn(child.module, child.args, env)
        except ForkServerGone as exc:
            log.warning("%s: %s; starting %s as a fresh interpreter", child.name, exc, child.name)
            return None
        except OSError as exc:
            log.warning("fork server could not fork %s (%s): a fresh interpreter", child.name, exc)
            return None
        return pid, trio.lowlevel.FdStream(read_end), lambda: wait_for_exit(pid)

    async def _exec_child(self, child: ChildSpec, env: dict[str, str]) -> _Started | None:
        """The actor as a fresh ``python -m``; None (the failure carried out) if it fails."""
        # -P: no current-directory entry on sys.path, so a folder named ``orca`` or
        # ``actors`` wherever orcad was started cannot shadow our packages (issue 15).
        argv = [sys.executable, "-P", "-m", child.module, *child.args]
        try:
            proc = await trio.lowlevel.open_process(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )
        except OSError as exc:
            log.error("cannot start %s: %s", child.name, exc)
            self._carry_out(
                self.core.spawn_failed(child.name, f"spawn failed: {exc}", time.monotonic())
            )
            return None
        assert proc.stdout is not None
        return proc.pid, proc.stdout, proc.wait

    async def _terminate(self, pid: int, grace: float) -> None:
        exited = self._exit_events.get(pid)
        if exited is None:
            return
        _signal_group(pid, signal.SIGTERM)
        with trio.move_on_after(grace):
            await exited.wait()
            return
        log.warning("pid %d ignored SIGTERM for %ss: SIGKILL", pid, grace)
        _signal_group(pid, signal.SIGKILL)
        await exited.wait()

    # -- timers ----------------------------------------------------------------------
    async def _timer_loop(self) -> None:
        """Wake at the core's next deadline (at least every check-in step) and tick."""
        logged_pauses = 0
        while True:
            deadline = self.core.next_deadline()
            wake = self._wake
            with trio.move_on_at(math.inf if deadline is None else self._to_trio(deadline)):
                await wake.wait()
            if self._wake is wake:
                self._wake = trio.Event()
            self._carry_out(self.core.tick(time.monotonic()), from_timer=True)
            if self.core.pauses != logged_pauses:
                logged_pauses = self.core.pauses
                log.warning(
                    "orcad was not scheduled (stopped or starved): %d pause(s), %.1fs in all;"
                    " liveness clocks moved past it, nothing killed for it",
                    self.core.pauses,
                    self.core.paused_s,
                )

    def _to_trio(self, monotonic_deadline: float) -> float:
        return trio.current_time() + (monotonic_deadline - time.monotonic())

    # -- ops -------------------------------------------------------------------------
    def _register_ops(self) -> None:
        table: list[tuple[Op[Any, Any], Callable[[Any], Awaitable[Any]], bool]] = [
            (sup.READY, self._op_ready, False),
            (sup.HEARTBEAT, self._op_heartbeat, False),
            (sup.STATUS, self._op_status, False),
            (sup.SNAPSHOT, self._op_snapshot, False),
            (sup.RESTART, self._op_restart, False),
            (sup.WAIT_READY, self._op_wait_ready, True),  # a long poll
            (sup.WAKE, self._op_wake, True),  # replies once the actor is ready
            (sup.STOP, self._op_stop, True),  # replies only once everything stopped
            (sup.HAND_OVER, self._op_hand_over, True),  # likewise
        ]
        for op, handler, concurrent in table:
            self.rpc.register(op, handler, concurrent=concurrent)

    async def _op_ready(self, a: sup.ReadyArgs) -> sup.Empty:
        now = time.monotonic()
        self._carry_out(
            self.core.ready(
                a.name,
                a.pid,
                now,
                rpc=a.rpc,
                pub=a.pub,
                epoch=a.epoch,
                version=a.version,
                build=a.build,
            )
        )
        return sup.Empty()

    async def _op_heartbeat(self, a: sup.HeartbeatArgs) -> sup.HeartbeatReply:
        # A heartbeat only moves a deadline later; the timer loop needs no wake-up.
        return sup.HeartbeatReply(known=self.core.heartbeat(a.name, a.pid, time.monotonic()))

    def _actor_rows(self) -> list[sup.ActorStatus]:
        import psutil

        rows = []
        for row in self.core.statuses(time.monotonic()):
            logfile = self._logs.get(row.name)
            health = None if logfile is None else logfile.health()
            if health is not None:
                row = msgspec.structs.replace(row, log=health)
            if row.pid is not None:
                try:
                    rss = psutil.Process(row.pid).memory_info().rss
                except psutil.Error:
                    pass
                else:
                    row = msgspec.structs.replace(row, rss=rss, pss=_pss(row.pid))
            rows.append(row)
        return rows

    def _supervisor_info(self, keeper: KeeperHello | None = None) -> sup.SupervisorInfo:
        return sup.SupervisorInfo(
            pid=os.getpid(),
            uptime=time.monotonic() - self.started_at,
            home=str(self.paths.home) if self.paths.home else None,
            endpoint=self.endpoint,
            endpoints=list(self.rpc.endpoints),
            strategy=self.spec.strategy,
            stopping=self.core.stopping,
            pauses=self.core.pauses,
            paused_s=self.core.paused_s,
            keeper_pid=self.keeper.pid,
            version=__version__,
            build=build_id(),
            build_stamp=build_stamp(),
            keeper_version=None if keeper is None else keeper.version,
            keeper_build=None if keeper is None else keeper.build,
            forkserver_pid=self.forks.pid if self.forks.ready else None,
        )

    def status(self, keeper: KeeperHello | None = None) -> sup.Status:
        return sup.Status(actors=self._actor_rows(), supervisor=self._supervisor_info(keeper))

    async def _op_status(self, _: NoArgs) -> sup.Status:
        return self.status(await self.keeper.hello())

    async def _op_snapshot(self, _: NoArgs) -> sup.Snapshot:
        keeper = await self.keeper.hello()
        return sup.Snapshot(
            epoch=self.events.epoch,
            seq=self.events.seq,
            actors=self._actor_rows(),
            supervisor=self._supervisor_info(keeper),
        )

    async def _op_restart(self, a: sup.RestartArgs) -> sup.Empty:
        if a.name not in self.core.children:
            raise NotFound(f"no actor named {a.name!r} (known: {', '.join(self.core.children)})")
        if self.core.stopping:
            raise Unavailable("orcad is stopping")
        self._carry_out(self.core.restart(a.name, time.monotonic()))
        return sup.Empty()

    async def _op_wake(self, a: sup.WakeArgs) -> sup.ActorStatus:
        """Start ``a.name`` if it is dormant; answer once it is ready (at once when it
        runs; a failed or stopped one is answered as it is)."""
        if a.name not in self.core.children:
            raise NotFound(f"no actor named {a.name!r} (known: {', '.join(self.core.children)})")
        if self.core.stopping:
            raise Unavailable("orcad is stopping")
        rec = self.core.children[a.name]
        if rec.state == "dormant":
            log.info("%s asked for: starting it", a.name)
            self._carry_out(self.core.wake(a.name, time.monotonic()))
        with trio.move_on_after(max(0.0, a.timeout)):
            async with self._changed:
                while rec.state in ("starting", "backoff", "dormant") and not self.core.stopping:
                    await self._changed.wait()
            return rec.status(time.monotonic())
        raise Timeout(f"{a.name} was not ready within {a.timeout:g}s ({rec.state})")

    async def _op_wait_ready(self, a: sup.WaitReadyArgs) -> sup.Status:
        with trio.move_on_after(a.timeout):
            async with self._changed:
                while not self.core.all_ready():
                    await self._changed.wait()
            return self.status()
        states = ", ".join(f"{r.name} {r.state}" for r in self.core.statuses(time.monotonic()))
        raise Timeout(f"not every actor was ready within {a.timeout:g}s: {states}")

    async def _op_hand_over(self, _: NoArgs) -> sup.HandOverReply:
        """``orca restart --all``: stop everything but the keeper, which must answer."""
        hello = await trio.to_thread.run_sync(keeper_hello, self.keeper.path)
        if hello is None and not keeper_answers(self.keeper.path):
            raise Unavailable(
                "no fd keeper answers: a hand-over would end every terminal (nothing stopped)"
            )
        await self._op_stop(sup.StopArgs(keep_terminals=True))
        return sup.HandOverReply(
            keeper_pid=self.keeper.pid, keeper_build=None if hello is None else hello.build
        )

    async def _op_stop(self, a: sup.StopArgs) -> sup.Empty:
        self._keep_terminals = self._keep_terminals or a.keep_terminals
        self._stop_requested.set()
        await self._stopped.wait()
        return sup.Empty()

    # -- life ------------------------------------------------------------------------
    async def stop_children(self, *, keep_terminals: bool = False) -> None:
        """Stop every child in reverse start order: SIGTERM, grace, SIGKILL of the group.

        Then, unless ``keep_terminals``, stop the fd keeper: the kept PTY masters close,
        the terminals hang up and their agents (adopted by us if ptyd died meanwhile)
        get SIGHUP; whatever ignores it is killed. With ``keep_terminals`` the keeper
        stays, holding every terminal, for the next ``orca up`` to re-adopt.
        """
        self.core.begin_stop()
        for rec in reversed(self.core.ordered()):
            if rec.pid is not None:
                await self._terminate(rec.pid, self.spec.grace_for(rec.spec))
        await self.forks.close()
        if keep_terminals:
            self.keeper.leave_running()
            log.info("terminals kept: the fd keeper (pid %s) stays", self.keeper.pid)
            return
        await self.keeper.stop()
        await self._end_adopted(self.spec.shutdown_grace_s)

    async def _end_adopted(self, grace: float) -> None:
        import psutil

        def adopted() -> list[psutil.Process]:
            self.keeper.reap_orphans()
            try:
                return [
                    p
                    for p in psutil.Process().children(recursive=True)
                    if p.status() != psutil.STATUS_ZOMBIE
                ]
            except psutil.Error:
                return []

        with trio.move_on_after(grace):
            while adopted():  # SIGHUP'd agents exit on their own schedule: await each SIGCHLD
                self._sigchld = trio.Event()
                await self._sigchld.wait()
        for proc in adopted():
            log.warning("killing adopted process %d that outlived its terminal", proc.pid)
            _signal_group(proc.pid, signal.SIGKILL)
        await trio.lowlevel.checkpoint()
        self.keeper.reap_orphans()

    async def _reap_on_sigchld(self) -> None:
        with trio.open_signal_receiver(signal.SIGCHLD) as signals:
            async for _ in signals:
                self.keeper.reap_orphans()
                self._sigchld.set()

    async def _start_forks(self, subreaper: bool, done: trio.Event) -> None:
        """The fork server, holding the enabled actors' modules: only where the actors
        it forks become our children (we are the subreaper) and it is not turned off."""
        try:
            if subreaper and wanted(os.environ):
                # Our own actors only: their entry modules run nothing when imported.
                modules = [
                    c.module
                    for c in self.spec.children
                    if c.enabled and c.module.startswith("actors.")
                ]
                assert self._nursery is not None
                await self.forks.start(modules, dict(os.environ), self._nursery)
            else:
                await self.forks.close()  # a forked one, never to be used
        finally:
            done.set()

    async def _report_ready(self, ready_fd: int | None) -> None:
        """Tell whoever started us (``orca up``) that the whole tree is ready, once."""
        if ready_fd is None:
            return
        try:
            with trio.move_on_after(self.spec.ready_timeout_s * 2):
                async with self._changed:
                    while not self.core.all_ready() and not self.core.any_failed():
                        await self._changed.wait()
            failed = self.core.any_failed()
            message = (
                f"failed {' '.join(failed)}\n"
                if failed
                else ("ready\n" if self.core.all_ready() else "timeout\n")
            )
            os.write(ready_fd, message.encode())
        except OSError:
            pass
        finally:
            os.close(ready_fd)

    async def run(self, ready_fd: int | None = None) -> None:
        try:
            # The actors' bind path, loopback check included: a refused tcp_host raises
            # BadTcpHost before anything is bound (config parsing refuses it earlier).
            bind_endpoints(
                self.paths, "supervisor", self.rpc, self.events, self.spec.tcp_host or None
            )
            await self._serve(ready_fd)
        finally:
            self.rpc.close()
            self.events.close()
            for logfile in self._logs.values():
                logfile.close()

    async def _serve(self, ready_fd: int | None) -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self.forks.adopt(self.preforked, nursery)
                self.preforked = None
                await nursery.start(self.rpc.serve)
                subreaper = become_subreaper()
                if not subreaper:
                    log.warning("not a child subreaper: terminals will not survive a ptyd crash")
                # Loading while the keeper is reached and any previous tree stops.
                forks_up = trio.Event()
                nursery.start_soon(self._start_forks, subreaper, forks_up)
                try:
                    await self.keeper.ensure()
                except (KeeperStartFailed, OSError) as exc:
                    log.error("no fd keeper (%s): terminals will not survive a crash", exc)
                nursery.start_soon(self.keeper.watch)
                nursery.start_soon(self._reap_on_sigchld)
                nursery.start_soon(self.events.run_heartbeats)
                nursery.start_soon(self._timer_loop)
                # A killed orcad's actors stop on their own; ours start once they have.
                names = [child.name for child in self.spec.children]
                stuck = await wait_for_leftover_actors(self.paths, names)
                if stuck:
                    log.warning(
                        "the previous %s still run(s) after %gs: starting ours anyway",
                        ", ".join(stuck),
                        LEFTOVER_WAIT_S,
                    )
                await forks_up.wait()
                self._carry_out(self.core.boot(time.monotonic()))
                nursery.start_soon(self._report_ready, ready_fd)

                async def on_signal() -> None:
                    async for signum in signals:
                        log.info("orcad: %s, stopping", signal.Signals(signum).name)
                        self._stop_requested.set()
                        return

                nursery.start_soon(on_signal)
                await self._stop_requested.wait()
                await self.stop_children(keep_terminals=self._keep_terminals)
                self._stopped.set()
                # Give the sup.stop caller its reply before the sockets close.
                await trio.sleep(0.05)
                nursery.cancel_scope.cancel()
