"""The keeper's watch on orcad: bring it back when it dies without stopping on purpose.

Why the keeper (docs/actors.md, "No two-fault window"): once orcad is dead its actors
stop, ``ptyd`` included, and the keeper is the only process holding the agents'
terminals; one more death (the keeper's) would hang them all up. The keeper is the one
process that exists whenever an agent's terminal does, so it is the one that can always
end that state, within a restart, without a person or a service manager.

How it tells a crash from a stop: orcad's instance lock (``orcad.lock``). While orcad
runs it holds the flock, and the keeper waits on a pidfd of the holder. When that orcad
exits, the file says how: emptied (orcad let go after an orderly stop: ``orca down``,
``--keep-terminals``, ``orca restart --all``'s hand-over, SIGTERM) means leave it; still
naming it (``read_abandoned_lock_info``: ``kill -9``, a crash) means start a new one as
``orca up`` does (``launch_orcad``: detached, the same ``ORCA_HOME`` and environment,
output in orcad's log), unless a service manager restarts it (``LockInfo.manager``).
The new orcad finds this keeper answering and adopts it, and its ``ptyd`` reclaims every
terminal, as after ``orca down --keep-terminals`` and ``orca up``. ``RevivalPolicy``
spaces the starts and gives up on a crash loop.

When it looks: when the keeper starts (one that ``ptyd`` started after orcad and the
old keeper were killed together finds orcad's lock abandoned), when the orcad it watches
exits, and on ``watch_orcad`` (an orcad that adopted this keeper asks to be watched).

The environment of a new orcad is the keeper's (orcad's, which is ``orca up``'s) without
what orcad adds for its actors: a keeper that ``ptyd`` started has ptyd's.

It runs in a thread of its own (``run``), beside the keeper's socket loop, and blocks
in ``select`` on what it waits for (orcad's pidfd, a started orcad's ready pipe, its
nudge pipe) or a timer: nothing wakes while orcad runs.
"""

from __future__ import annotations

import logging
import os
import select
import sys
import time
from collections.abc import Mapping

from actors.keeper.revival import GiveUp, RevivalPolicy
from orca.contracts.fd_keeper import KEEPER_ENV
from orca.contracts.orcad_lock import (
    EXIT_ALREADY_RUNNING,
    HEARTBEAT_ENV,
    SUPERVISOR_ENV,
    SUPERVISOR_PID_ENV,
    LockInfo,
    launch_orcad,
    read_abandoned_lock_info,
    read_lock_info,
)
from orca.paths import OrcaPaths
from orca.pipes import drain, read_ready_line
from orca.user_env import UNBUFFERED_SET_ENV

log = logging.getLogger("keeper.orcad")

# What orcad adds to its actors' environment (and so to a keeper ptyd starts): a new
# orcad is started without them, as `orca up` starts one.
CHILD_ONLY_ENV = (SUPERVISOR_ENV, SUPERVISOR_PID_ENV, HEARTBEAT_ENV, "ORCA_ACTOR_NAME", KEEPER_ENV)
# A started orcad reports within its ready_timeout_s * 2 (30 s by default); past this
# it is taken to run, and the lock says whether it does.
VERDICT_TIMEOUT_S = 120.0
# A lock held by nobody known yet (being written, or the holder forking): look again.
LOOK_AGAIN_S = 0.1


def orcad_environment(environ: Mapping[str, str], paths: OrcaPaths) -> dict[str, str]:
    """The environment a new orcad gets: ``environ`` without what orcad adds for its
    actors, ``ORCA_HOME`` this keeper's."""
    env = {k: v for k, v in environ.items() if k not in CHILD_ONLY_ENV}
    if env.pop(UNBUFFERED_SET_ENV, None):
        env.pop("PYTHONUNBUFFERED", None)  # orcad's own for its actors: it sets it again
    if paths.home is not None:
        env["ORCA_HOME"] = str(paths.home)
    return env


def describe_status(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    return f"exit code {code}" if code >= 0 else f"killed by signal {-code}"


class OrcadWatch:
    """Watch this profile's orcad; start a new one when it dies unannounced."""

    def __init__(
        self,
        paths: OrcaPaths,
        policy: RevivalPolicy | None = None,
        python: str = sys.executable,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.paths = paths
        self.policy = policy if policy is not None else RevivalPolicy()
        self._python = python
        self._environ = dict(os.environ if environ is None else environ)
        self._lock = paths.lock_file
        # A nudge is a byte here, drained before each look: one from then on wakes it.
        self._nudge_r, self._nudge_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._stopping = False
        self._ours: set[int] = set()  # orcads this keeper started that may still run
        self._watching: int | None = None
        # The abandoned lock last acted on: looking at it again starts nothing new.
        self._handled: LockInfo | None = None
        self.started = 0  # orcads started by this keeper, for tests and logs

    def nudge(self) -> None:
        """``watch_orcad``: an orcad asks to be watched; look at the lock again. Safe
        from any thread."""
        try:
            os.write(self._nudge_w, b"n")
        except OSError:
            pass  # full: a nudge is waiting already

    def stop(self) -> None:
        """End ``run`` at its next wait (tests; the keeper's thread is a daemon)."""
        self._stopping = True
        self.nudge()

    def run(self) -> None:
        """Look, wait, act, for the keeper's life (blocking: a thread of its own)."""
        try:
            while not self._stopping:
                drain(self._nudge_r)  # from here on, a nudge wakes the wait below
                self._look()
        finally:
            for fd in (self._nudge_r, self._nudge_w):
                os.close(fd)

    def _nudged_within(self, timeout: float | None) -> bool:
        """Wait up to ``timeout`` seconds (None: for ever) for a nudge."""
        return bool(select.select([self._nudge_r], [], [], timeout)[0])

    def _look(self) -> None:
        for pid in list(self._ours):  # an orcad of ours that exited unwatched: no zombie
            self._reap_if_exited(pid)
        held = read_lock_info(self._lock)
        if held is not None:
            if held.pid is None:
                self._nudged_within(LOOK_AGAIN_S)  # its holder is writing the file
                return
            if held.pid not in self._ours:
                self.policy.reset()  # started some other way: its failures are its own
            self._watch(held.pid)
            return
        dead = read_abandoned_lock_info(self._lock)
        if dead is None or dead == self._handled:
            # Stopped on purpose, never started, or given up on: until an orcad asks.
            self._nudged_within(None)
            return
        self._bring_back(dead)

    def _watch(self, pid: int) -> None:
        """Until orcad ``pid`` exits (then say how) or a nudge."""
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            self._nudged_within(LOOK_AGAIN_S)  # gone this instant: the next look tells how
            return
        if self._watching != pid:
            self._watching = pid
            log.info("watching orcad (pid %d)", pid)
        try:
            exited = pidfd in select.select([pidfd, self._nudge_r], [], [])[0]
        finally:
            os.close(pidfd)
        if not exited:
            return
        self._watching = None
        how = self._reap(pid)
        dead = read_abandoned_lock_info(self._lock)
        if dead is not None and dead.pid == pid:
            log.warning("orcad (pid %d) died without stopping on purpose (%s)", pid, how)
        else:
            log.info("orcad (pid %d) stopped (%s): not starting another", pid, how)

    def _bring_back(self, dead: LockInfo) -> None:
        """Start orcads until one runs, another is started some other way, or the policy
        gives up (``RevivalPolicy``)."""
        if dead.manager:
            log.info("orcad (pid %s) died; %s restarts it", dead.pid, dead.manager)
            self._handled = dead
            return
        ran_s = None if dead.started_at is None else max(time.time() - dead.started_at, 0.0)
        decision = self.policy.orcad_died(ran_s)
        while not self._stopping:
            if isinstance(decision, GiveUp):
                log.error(
                    "orcad died %d times in a row within %gs of its start: not starting it"
                    " again; this keeper holds every terminal until `orca up` (see %s)",
                    decision.fast_failures,
                    self.policy.stable_run_s,
                    self.paths.log_file("orcad"),
                )
                # Invariant: only a decision to leave orcad dead marks its lock handled;
                # a started orcad that crashes leaves a record of its own, acted on.
                self._handled = read_abandoned_lock_info(self._lock)
                return
            if decision.after_s > 0:
                log.info("starting orcad again in %gs", decision.after_s)
                if self._nudged_within(decision.after_s):
                    return  # an orcad asks to be watched: one was started some other way
            if read_lock_info(self._lock) is not None:
                return  # one runs again (`orca up`, a service manager): watch it
            if read_abandoned_lock_info(self._lock) is None:
                return  # an orcad ran and stopped on purpose meanwhile: leave it
            failed_after = self._start()
            if failed_after is None:
                return
            decision = self.policy.orcad_died(failed_after)

    def _start(self) -> float | None:
        """Start an orcad as ``orca up`` does. None once it has booted (or found another
        orcad running); else the seconds until it exited, having never booted."""
        started = time.monotonic()
        env = orcad_environment(self._environ, self.paths)
        try:
            pid, ready_fd, _ = launch_orcad(self._python, env, self.paths.log_file("orcad"))
        except OSError as exc:
            log.error("cannot start orcad: %s", exc)
            return 0.0
        self._ours.add(pid)
        self.started += 1
        log.warning("orcad is gone: started a new one (pid %d)", pid)
        verdict = read_ready_line(ready_fd, VERDICT_TIMEOUT_S)
        took = time.monotonic() - started
        if verdict:  # ready, failed <actors>, timeout: it holds the lock and runs
            log.info("orcad (pid %d) is back: %s after %.2fs", pid, verdict, took)
            return None
        status = wait_child(pid)
        self._ours.discard(pid)
        if status is not None and os.waitstatus_to_exitcode(status) == EXIT_ALREADY_RUNNING:
            log.info("orcad (pid %d): another orcad runs already; watching that one", pid)
            return None
        log.error(
            "orcad (pid %d) exited (%s) after %.2fs, before its tree was ready; see %s",
            pid,
            "?" if status is None else describe_status(status),
            took,
            self.paths.log_file("orcad"),
        )
        return took

    def _reap_if_exited(self, pid: int) -> None:
        try:
            reaped, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            reaped = pid
        if reaped:
            self._ours.discard(pid)

    def _reap(self, pid: int) -> str:
        """Collect ``pid``'s exit status if it is our child (an orcad we started)."""
        self._ours.discard(pid)
        try:
            reaped, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return "not started by this keeper: its exit status went to its parent"
        return describe_status(status) if reaped else "exit status unknown"


def wait_child(pid: int) -> int | None:
    """Our child ``pid``'s wait status once it has exited; None if it is not our child.
    Blocking."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        pidfd = None
    if pidfd is not None:
        try:
            select.select([pidfd], [], [])
        finally:
            os.close(pidfd)
    return collect_status(pid)


def collect_status(pid: int) -> int | None:
    """The wait status of our exited child ``pid`` (reaping it); None if it still runs
    or is not our child. Never blocks (``WNOHANG``)."""
    try:
        reaped, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return None
    return status if reaped else None
