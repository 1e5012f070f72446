"""The supervisor's decisions, with no I/O: child events in, effects out.

The shell (``tree.py``) feeds this core what happened (a child was spawned, reported
ready, heartbeated, exited; time passed; an operator asked for a restart) and carries
out the effects it returns (spawn, terminate, kill, publish). Every ordering question —
what happens when a child dies while its sibling is backing off, when an operator
restart races a crash — is answered here and unit-tested without processes.

Policy, per child:
- restart type: ``permanent`` always restarts, ``transient`` only after an abnormal exit
  (non-zero, a signal, or killed by us), ``temporary`` never;
- the first crash after a stable run restarts at once (a one-off kill costs only the
  start-up); each further crash waits longer: ``backoff_initial_s``, doubling up to
  ``backoff_max_s``; the delay resets once the child has stayed up ``stable_after_s``;
- intensity: more than ``intensity`` restarts within ``period_s`` escalates: the child
  is marked ``failed`` and left alone (no CPU burnt) until an operator restart clears it;
- liveness: a child that misses heartbeats for ``heartbeat_timeout_s``, or is not ready
  within ``ready_timeout_s``, is killed and then handled like any other crash;
- orcad's own pauses are not the children's fault: the core asks to be woken at least
  every ``checkin_step_s`` and sees every input's time, so a gap between two of its
  observations longer than ``pause_threshold_s`` means orcad itself was not running
  (SIGSTOP, a frozen cgroup, a debugger, a starved VM). Heartbeats sent meanwhile are
  queued unread in its socket, so every liveness clock is moved forward by the gap
  before anything is judged (``_observe``). A machine suspend needs nothing: the
  monotonic clock stops with it, and wall-clock jumps move no deadline (none uses it);
- strategy ``rest_for_one``: a crash also stops every child declared after it; they
  start again once the crashed child is ready;
- dormant: a child's first start (``boot``) may end in ``DORMANT_EXIT``: it has nothing
  to do until asked. It is then ``dormant``: not a crash, nothing restarted or stopped,
  counted as ready, and started again (for good: its later starts may not sleep) by
  ``wake`` when a client asks for it, or by an operator restart.
"""

from __future__ import annotations

import signal
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from actors.supervisor.config import ChildSpec, SupervisorSpec
from orca.contracts.supervisor import (
    DORMANT_EXIT,
    ActorEvent,
    ActorExited,
    ActorFailed,
    ActorLogFailing,
    ActorLogRecovered,
    ActorRestarting,
    ActorStarted,
    ActorState,
    ActorStatus,
    ExitInfo,
)

# A child that was stable and crashes once is restarted without delay: the crash loop
# guard is the growing delay of the crashes that follow (and the intensity limit).
FIRST_RESTART_DELAY_S = 0.0
# orcad checks in this many times per heartbeat timeout, and a gap of more than two
# check-ins is a pause of orcad's own: detected well before any clock it moves expires.
CHECKINS_PER_TIMEOUT = 4
PAUSE_CHECKINS = 2
DORMANT_REASON = "dormant: starts when asked"


@dataclass(frozen=True)
class Spawn:
    name: str
    may_sleep: bool = False


@dataclass(frozen=True)
class Terminate:
    """SIGTERM the child's process group, SIGKILL it after ``grace`` seconds."""

    name: str
    pid: int
    grace: float


@dataclass(frozen=True)
class Kill:
    name: str
    pid: int


@dataclass(frozen=True)
class Publish:
    """Publish one of the contract's ``actor.*`` events."""

    event: ActorEvent


Effect = Spawn | Terminate | Kill | Publish


@dataclass
class ChildRecord:
    spec: ChildSpec
    index: int
    backoff_s: float
    state: ActorState = "stopped"
    pid: int | None = None
    started_at: float | None = None
    ready_at: float | None = None
    last_heartbeat: float | None = None
    restart_at: float | None = None
    restarts: int = 0
    recent_restarts: deque[float] = field(default_factory=deque)
    last_exit: ExitInfo | None = None
    kill_reason: str | None = None
    awaiting_peer: bool = False
    operator_restart: bool = False
    may_sleep: bool = False  # this start may end dormant (boot's only)
    version: str | None = None
    build: str | None = None

    def status(self, now: float) -> ActorStatus:
        """The row ``sup.status`` shows (``rss`` is the shell's to fill in)."""
        return ActorStatus(
            name=self.spec.name,
            module=self.spec.module,
            pid=self.pid,
            state=self.state,
            restarts=self.restarts,
            uptime=(now - self.ready_at)
            if self.state == "running" and self.ready_at is not None
            else None,
            last_exit=self.last_exit,
            version=self.version if self.pid is not None else None,
            build=self.build if self.pid is not None else None,
        )


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"


class SupervisorCore:
    """Restart policy for an ordered list of children."""

    def __init__(self, spec: SupervisorSpec) -> None:
        self.spec = spec
        self.children = {
            c.name: ChildRecord(c, i, FIRST_RESTART_DELAY_S) for i, c in enumerate(spec.children)
        }
        self.stopping = False
        self.checkin_step_s = spec.heartbeat_timeout_s / CHECKINS_PER_TIMEOUT
        self.pause_threshold_s = PAUSE_CHECKINS * self.checkin_step_s
        self.last_seen: float | None = None
        self.pauses = 0
        self.paused_s = 0.0

    # -- queries ------------------------------------------------------------------
    def ordered(self) -> list[ChildRecord]:
        return sorted(self.children.values(), key=lambda r: r.index)

    def all_ready(self) -> bool:
        return all(
            r.state in ("running", "dormant")
            or (r.state == "stopped" and r.spec.restart != "permanent" and r.last_exit is not None)
            for r in self.children.values()
        )

    def any_failed(self) -> list[str]:
        return [r.spec.name for r in self.ordered() if r.state == "failed"]

    def statuses(self, now: float) -> list[ActorStatus]:
        return [r.status(now) for r in self.ordered()]

    def next_deadline(self) -> float | None:
        deadlines: list[float] = []
        for r in self.children.values():
            if r.state == "backoff" and r.restart_at is not None and not r.awaiting_peer:
                deadlines.append(r.restart_at)
            elif r.kill_reason is None and r.pid is not None:
                if r.state == "starting" and r.started_at is not None:
                    deadlines.append(r.started_at + self.spec.ready_timeout_s)
                elif r.state == "running" and r.last_heartbeat is not None:
                    deadlines.append(r.last_heartbeat + self.spec.heartbeat_timeout_s)
        if self.last_seen is not None and not self.stopping:
            deadlines.append(self.last_seen + self.checkin_step_s)  # see _observe
        return min(deadlines) if deadlines else None

    # -- orcad's own clock ------------------------------------------------------------
    def _observe(self, now: float) -> float:
        """Note that orcad runs at ``now``; returns the pause it detected (0.0 if none).

        Invariant: ``last_seen`` is the latest instant orcad is known to have run, and
        the shell wakes the core by ``last_seen + checkin_step_s``. A longer silence is
        orcad's, not its children's: every liveness clock moves by the whole gap (at
        most one check-in step more generous than the true pause), so a child that
        heartbeated on time while orcad was stopped is judged as if no time had passed.
        """
        last = self.last_seen
        self.last_seen = now if last is None else max(last, now)
        if last is None or now - last <= self.pause_threshold_s:
            return 0.0
        gap = now - last
        self.pauses += 1
        self.paused_s += gap
        for rec in self.children.values():
            if rec.last_heartbeat is not None:
                rec.last_heartbeat += gap
            if rec.state == "starting" and rec.started_at is not None:
                rec.started_at += gap
        return gap

    # -- inputs -------------------------------------------------------------------
    def _start(self, rec: ChildRecord, now: float, *, may_sleep: bool = False) -> Spawn:
        rec.state = "starting"
        rec.may_sleep = may_sleep
        rec.pid = None
        rec.started_at = now
        rec.ready_at = None
        rec.last_heartbeat = None
        rec.restart_at = None
        rec.kill_reason = None
        rec.awaiting_peer = False
        return Spawn(rec.spec.name, may_sleep)

    def boot(self, now: float) -> list[Effect]:
        """Start every child (they come up in parallel; order matters for stop/rest_for_one)."""
        self._observe(now)
        return [self._start(r, now, may_sleep=True) for r in self.ordered()]

    def wake(self, name: str, now: float) -> list[Effect]:
        """A client asks for ``name``: start it if it is dormant (else nothing to do)."""
        self._observe(now)
        rec = self.children[name]
        if rec.state != "dormant" or self.stopping:
            return []
        rec.last_exit = None  # its sleep was no exit worth showing once it runs
        return [self._start(rec, now)]

    def spawned(self, name: str, pid: int, now: float) -> list[Effect]:
        self._observe(now)
        rec = self.children[name]
        rec.pid = pid
        rec.started_at = now
        if self.stopping:
            return [Terminate(name, pid, self.spec.grace_for(rec.spec))]
        return []

    def spawn_failed(self, name: str, error: str, now: float) -> list[Effect]:
        """The process could not even be created (bad interpreter, EMFILE...): a crash."""
        return self._crashed(self.children[name], ExitInfo(code=None, reason=error), now)

    def ready(
        self,
        name: str,
        pid: int,
        now: float,
        *,
        rpc: Sequence[str] = (),
        pub: Sequence[str] = (),
        epoch: str = "",
        version: str = "",
        build: str = "",
    ) -> list[Effect]:
        """``name`` (as ``pid``) bound its sockets at ``rpc``/``pub``: it is running."""
        self._observe(now)
        rec = self.children.get(name)
        if rec is None or rec.pid != pid or rec.state != "starting":
            return []
        rec.state = "running"
        rec.ready_at = now
        rec.version = version or None
        rec.build = build or None
        rec.last_heartbeat = now
        effects: list[Effect] = [
            Publish(ActorStarted(name=name, pid=pid, rpc=list(rpc), pub=list(pub), epoch=epoch))
        ]
        for later in self.ordered()[rec.index + 1 :]:
            if later.awaiting_peer and not self.stopping:
                effects.append(self._start(later, now))
        return effects

    def heartbeat(self, name: str, pid: int, now: float) -> bool:
        self._observe(now)
        rec = self.children.get(name)
        if rec is None or rec.pid != pid:
            return False
        rec.last_heartbeat = now
        if (
            rec.state == "running"
            and rec.ready_at is not None
            and now - rec.ready_at >= self.spec.stable_after_s
        ):
            rec.backoff_s = FIRST_RESTART_DELAY_S
        return True

    def exited(self, name: str, pid: int, returncode: int, now: float) -> list[Effect]:
        self._observe(now)
        rec = self.children[name]
        if rec.pid != pid:
            return []
        dormant = (
            rec.may_sleep and returncode == DORMANT_EXIT and rec.kill_reason is None
            and not self.stopping and not rec.operator_restart and not rec.awaiting_peer
        )  # fmt: skip
        reason = rec.kill_reason or (DORMANT_REASON if dormant else describe_exit(returncode))
        exit_info = ExitInfo(code=returncode, reason=reason)
        rec.pid = None
        rec.last_exit = exit_info
        effects: list[Effect] = [
            Publish(ActorExited(name=name, pid=pid, code=returncode, reason=reason))
        ]
        if self.stopping:
            rec.state = "stopped"
            return effects
        if rec.operator_restart:
            rec.operator_restart = False
            return [*effects, self._start(rec, now)]
        if rec.awaiting_peer:
            rec.state = "backoff"
            rec.restart_at = None
            return effects
        if dormant:
            rec.state = "dormant"
            return effects
        normal = returncode == 0 and rec.kill_reason is None
        if rec.spec.restart == "temporary" or (rec.spec.restart == "transient" and normal):
            rec.state = "stopped"
            return effects
        return effects + self._crashed(rec, exit_info, now)

    def _crashed(self, rec: ChildRecord, exit_info: ExitInfo, now: float) -> list[Effect]:
        name = rec.spec.name
        rec.pid = None
        rec.last_exit = exit_info
        window = rec.recent_restarts
        while window and now - window[0] > self.spec.period_s:
            window.popleft()
        effects: list[Effect] = []
        if len(window) >= self.spec.intensity:
            rec.state = "failed"
            rec.restart_at = None
            effects.append(
                Publish(
                    ActorFailed(
                        name=name,
                        restarts=len(window) + 1,
                        period_s=self.spec.period_s,
                        last_exit=exit_info,
                    )
                )
            )
        else:
            window.append(now)
            rec.restarts += 1
            if rec.ready_at is not None and now - rec.ready_at >= self.spec.stable_after_s:
                rec.backoff_s = FIRST_RESTART_DELAY_S
            delay = rec.backoff_s
            rec.backoff_s = min(
                max(delay * 2, self.spec.backoff_initial_s), self.spec.backoff_max_s
            )
            rec.state = "backoff"
            rec.restart_at = now + delay
            effects.append(
                Publish(
                    ActorRestarting(
                        name=name, delay_s=delay, restarts=rec.restarts, last_exit=exit_info
                    )
                )
            )
        if self.spec.strategy == "rest_for_one":
            effects.extend(self._stop_dependents(rec, now))
        return effects

    def _stop_dependents(self, rec: ChildRecord, now: float) -> list[Effect]:
        effects: list[Effect] = []
        for later in self.ordered()[rec.index + 1 :]:
            if later.state in ("starting", "running", "backoff"):
                later.awaiting_peer = True
                if later.pid is not None:
                    later.kill_reason = f"rest_for_one: {rec.spec.name} exited"
                    effects.append(
                        Terminate(later.spec.name, later.pid, self.spec.grace_for(later.spec))
                    )
                else:
                    later.state = "backoff"
                    later.restart_at = None
        return effects

    def tick(self, now: float) -> list[Effect]:
        """Act on expired deadlines: restart after backoff, kill the hung and the slow.

        After a pause of orcad's own (``_observe``) nothing is judged on time it missed."""
        if self.stopping:
            return []
        self._observe(now)
        effects: list[Effect] = []
        for rec in self.ordered():
            if rec.state == "backoff" and not rec.awaiting_peer and rec.restart_at is not None:
                if now >= rec.restart_at:
                    effects.append(self._start(rec, now))
            elif rec.pid is not None and rec.kill_reason is None:
                if (
                    rec.state == "starting"
                    and rec.started_at is not None
                    and now - rec.started_at >= self.spec.ready_timeout_s
                ):
                    rec.kill_reason = f"not ready within {self.spec.ready_timeout_s:g}s"
                    effects.append(Kill(rec.spec.name, rec.pid))
                elif (
                    rec.state == "running"
                    and rec.last_heartbeat is not None
                    and now - rec.last_heartbeat >= self.spec.heartbeat_timeout_s
                ):
                    rec.kill_reason = f"no heartbeat for {now - rec.last_heartbeat:.1f}s (hung)"
                    effects.append(Kill(rec.spec.name, rec.pid))
        return effects

    def restart(self, name: str, now: float) -> list[Effect]:
        """Operator restart: clears ``failed`` and the intensity window, restarts at once."""
        rec = self.children[name]
        rec.recent_restarts.clear()
        rec.backoff_s = FIRST_RESTART_DELAY_S
        if rec.pid is not None:
            rec.operator_restart = True
            rec.kill_reason = "restarted by operator"
            return [Terminate(name, rec.pid, self.spec.grace_for(rec.spec))]
        return [
            Publish(ActorRestarting(name=name, delay_s=0.0, restarts=rec.restarts, operator=True)),
            self._start(rec, now),
        ]

    def log_failing(self, name: str, error: str, dropped_lines: int) -> list[Effect]:
        """``name``'s log cannot be written: say so once; the child is not touched."""
        return [Publish(ActorLogFailing(name=name, error=error, dropped_lines=dropped_lines))]

    def log_recovered(self, name: str, dropped_lines: int) -> list[Effect]:
        return [Publish(ActorLogRecovered(name=name, dropped_lines=dropped_lines))]

    def begin_stop(self) -> None:
        self.stopping = True
        for rec in self.children.values():
            if rec.pid is None:
                rec.state = "stopped"
