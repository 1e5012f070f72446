"""The supervisor's restart policy, decided without processes (actors/supervisor/core.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from actors.supervisor.config import ChildSpec, SupervisorSpec
from actors.supervisor.core import Kill, Publish, Spawn, SupervisorCore, Terminate
from orca.contracts import supervisor as sup
from orca.contracts.base import spec_of

SPEC = SupervisorSpec(
    children=(ChildSpec("a", "m.a"), ChildSpec("b", "m.b")),
    intensity=3,
    period_s=60.0,
    backoff_initial_s=0.25,
    backoff_max_s=1.0,
    stable_after_s=10.0,
    heartbeat_timeout_s=5.0,
    ready_timeout_s=15.0,
)


def booted(spec: SupervisorSpec = SPEC) -> SupervisorCore:
    core = SupervisorCore(spec)
    assert core.boot(0.0) == [Spawn(c.name, may_sleep=True) for c in spec.children]
    for i, c in enumerate(spec.children):
        core.spawned(c.name, 100 + i, 0.0)
        core.ready(c.name, 100 + i, 0.1)
    return core


def advance(core: SupervisorCore, to: float) -> list[object]:
    """Run orcad's timer up to ``to`` as the shell does: a tick at least every check-in step."""
    effects: list[object] = []
    while core.last_seen is not None and (t := core.last_seen + core.checkin_step_s) < to:
        effects += core.tick(t)
    return effects + core.tick(to)


def published(effects: Sequence[object]) -> list[tuple[str, str]]:
    """(event type, actor name) of every event among ``effects``."""
    return [(spec_of(e.event).type, e.event.name) for e in effects if isinstance(e, Publish)]


def test_ready_publishes_started_and_marks_running() -> None:
    """A child is running only once it reported ready; that publishes actor.started."""
    core = SupervisorCore(SPEC)
    core.boot(0.0)
    core.spawned("a", 100, 0.0)
    assert core.children["a"].state == "starting" and not core.all_ready()
    effects = core.ready("a", 100, 0.5, rpc=["ipc://a"], pub=["ipc://p"], epoch="e1")
    assert effects == [
        Publish(sup.ActorStarted(name="a", pid=100, rpc=["ipc://a"], pub=["ipc://p"], epoch="e1"))
    ]
    assert core.children["a"].state == "running"


def test_crash_backs_off_exponentially_up_to_the_cap() -> None:
    """The first crash restarts at once; each further one doubles the delay up to the cap."""
    spec = replace(SPEC, intensity=10)
    core = booted(spec)
    delays = []
    now, pid = 1.0, 100
    for _ in range(5):
        effects = core.exited("a", pid, 1, now)
        assert core.children["a"].state == "backoff"
        delays.append(core.children["a"].restart_at - now)  # type: ignore[operator]
        if delays[-1] > 0:
            assert core.tick(now) == [], "nothing happens before the delay"
        now = core.children["a"].restart_at  # type: ignore[assignment]
        assert core.tick(now) == [Spawn("a")]
        pid += 10
        core.spawned("a", pid, now)
        assert (sup.RESTARTING.type, "a") in published(effects)
    assert delays == [0.0, 0.25, 0.5, 1.0, 1.0]


def test_backoff_resets_after_stable_uptime() -> None:
    """A child that stayed up stable_after_s is restarted at once again after its next crash."""
    core = booted(replace(SPEC, intensity=10))
    for t, pid in ((1.0, 100), (2.0, 200)):  # two quick crashes: the delay has grown
        core.exited("a", pid, 1, t)
        core.tick(core.children["a"].restart_at)  # type: ignore[arg-type]
        core.spawned("a", pid + 100, t)
        core.ready("a", pid + 100, t + 0.1)
    assert core.children["a"].backoff_s == 0.5
    core.exited("a", 300, 1, 50.0)  # up for much longer than stable_after_s
    assert core.children["a"].restart_at == 50.0


def test_intensity_exceeded_marks_failed_and_stops_restarting() -> None:
    """More than `intensity` restarts within the period escalates to failed; nothing is scheduled."""
    core = booted()
    now, pid = 1.0, 100
    for _ in range(3):
        core.exited("a", pid, 1, now)
        now = core.children["a"].restart_at  # type: ignore[assignment]
        core.tick(now)
        pid += 1
        core.spawned("a", pid, now)
    effects = core.exited("a", pid, 1, now)
    assert published(effects) == [(sup.EXITED.type, "a"), (sup.FAILED.type, "a")]
    assert (
        core.children["a"].state == "failed" and core.next_deadline() is not None
    )  # b's heartbeat
    assert all(not isinstance(e, Spawn) for e in core.tick(now + 1000))


def test_operator_restart_clears_failed() -> None:
    """orca restart on a failed child clears its window and spawns it at once."""
    core = booted(replace(SPEC, intensity=0))
    core.exited("a", 100, 1, 1.0)
    assert core.children["a"].state == "failed"
    effects = core.restart("a", 2.0)
    assert Spawn("a") in effects and core.children["a"].state == "starting"


def test_operator_restart_of_running_child_terminates_then_respawns_without_backoff() -> None:
    """A running child is stopped gracefully and started again as soon as it exits."""
    core = booted()
    assert core.restart("a", 1.0) == [Terminate("a", 100, SPEC.shutdown_grace_s)]
    effects = core.exited("a", 100, 0, 1.5)
    assert Spawn("a") in effects
    assert core.children["a"].last_exit == sup.ExitInfo(code=0, reason="restarted by operator")
    assert core.children["a"].restarts == 0


def test_restart_types() -> None:
    """permanent restarts always; transient only after an abnormal exit; temporary never."""
    spec = replace(
        SPEC,
        children=(
            ChildSpec("p", "m"),
            ChildSpec("t", "m", restart="transient"),
            ChildSpec("x", "m", restart="temporary"),
        ),
    )
    core = booted(spec)
    core.exited("p", 100, 0, 1.0)
    core.exited("t", 101, 0, 1.0)
    core.exited("x", 102, 1, 1.0)
    assert [core.children[n].state for n in "ptx"] == ["backoff", "stopped", "stopped"]
    core2 = booted(spec)
    core2.exited("t", 101, -9, 1.0)
    assert core2.children["t"].state == "backoff"


def test_missed_heartbeats_kill_the_child() -> None:
    """A running child silent for heartbeat_timeout_s is SIGKILLed, and its exit says why."""
    core = booted()
    assert advance(core, 3.0) == []
    assert core.heartbeat("a", 100, 3.0)
    assert not core.heartbeat("a", 999, 3.0), "a stale pid's heartbeat is not counted"
    assert advance(core, 7.0) == [Kill("b", 101)]
    assert advance(core, 8.1) == [Kill("a", 100)]
    assert advance(core, 9.0) == [], "a kill is sent once"
    effects = core.exited("a", 100, -9, 9.0)
    (exited,) = [e.event for e in effects if isinstance(e, Publish)][:1]
    assert isinstance(exited, sup.ActorExited) and "no heartbeat" in exited.reason


def test_child_not_ready_in_time_is_killed() -> None:
    """A child that never reports ready within ready_timeout_s is killed as a crash."""
    core = SupervisorCore(SPEC)
    core.boot(0.0)
    core.spawned("a", 100, 0.0)
    assert advance(core, 14.9) == []
    assert core.tick(15.0) == [Kill("a", 100)]


def test_rest_for_one_stops_later_children_and_restarts_them_after_the_crashed_one() -> None:
    """rest_for_one: a crash stops every later child; they start once the crashed one is ready."""
    spec = replace(
        SPEC,
        strategy="rest_for_one",
        children=(ChildSpec("a", "m"), ChildSpec("b", "m"), ChildSpec("c", "m")),
    )
    core = booted(spec)
    effects = core.exited("a", 100, 1, 1.0)
    assert Terminate("b", 101, spec.shutdown_grace_s) in effects
    assert Terminate("c", 102, spec.shutdown_grace_s) in effects
    core.exited("b", 101, 0, 1.1)
    core.exited("c", 102, 0, 1.1)
    assert core.children["b"].restarts == 0
    assert core.tick(1.25) == [Spawn("a")]
    core.spawned("a", 200, 1.25)
    effects = core.ready("a", 200, 1.5)
    assert [e for e in effects if isinstance(e, Spawn)] == [Spawn("b"), Spawn("c")]


def test_one_for_one_leaves_siblings_alone() -> None:
    """one_for_one: a crash affects only the crashed child."""
    core = booted()
    effects = core.exited("a", 100, 1, 1.0)
    assert not [e for e in effects if isinstance(e, Terminate | Kill)]
    assert core.children["b"].state == "running"


def test_stopping_prevents_restarts() -> None:
    """After begin_stop, exits are final and late spawns are terminated."""
    core = booted()
    core.begin_stop()
    core.exited("a", 100, -15, 1.0)
    assert core.children["a"].state == "stopped" and core.tick(100.0) == []


def test_the_core_asks_to_be_woken_every_checkin_step() -> None:
    """With nothing else due, the next deadline is orcad's own check-in, not the timeout."""
    core = booted()
    assert core.checkin_step_s == SPEC.heartbeat_timeout_s / 4
    assert core.next_deadline() == 0.1 + core.checkin_step_s


def test_a_pause_of_orcad_itself_kills_no_healthy_child() -> None:
    """orcad not scheduled for 30 s (SIGSTOP): on resume nobody is judged on the missed time."""
    core = booted()
    assert advance(core, 2.0) == []
    core.heartbeat("a", 100, 2.0)
    core.heartbeat("b", 101, 2.0)
    assert core.tick(32.0) == [], "the first tick after the pause kills nobody"
    assert core.pauses == 1 and core.paused_s == 30.0
    # The heartbeats queued while orcad was stopped arrive; both stay up for good.
    assert core.heartbeat("a", 100, 32.1) and core.heartbeat("b", 101, 32.1)
    for t in (33.0, 34.0, 35.0, 36.0):
        assert advance(core, t) == []
        core.heartbeat("a", 100, t)
        core.heartbeat("b", 101, t)
    assert [r.state for r in core.ordered()] == ["running", "running"]


def test_a_child_hung_across_a_pause_is_still_killed() -> None:
    """The pause buys a silent child one timeout from the resume, not immunity."""
    core = booted()
    assert advance(core, 2.0) == []
    core.heartbeat("a", 100, 2.0)
    core.heartbeat("b", 101, 2.0)
    assert core.tick(32.0) == []
    effects: list[object] = []
    t = 32.0
    while t < 40.0:
        t += 0.5
        effects += advance(core, t)
        core.heartbeat("b", 101, t)
    assert effects == [Kill("a", 100)], "a (silent) is killed, b (heartbeating) is not"


def test_a_pause_moves_the_readiness_deadline_too() -> None:
    """A child starting while orcad was stopped is not killed as 'not ready in time'."""
    core = SupervisorCore(SPEC)
    core.boot(0.0)
    core.spawned("a", 100, 0.0)
    assert advance(core, 10.0) == []
    assert core.tick(100.0) == []
    assert core.ready("a", 100, 100.1) != []
    assert core.children["a"].state == "running"


def test_a_late_tick_within_the_threshold_is_not_a_pause() -> None:
    """A tick up to two check-in steps late is ordinary scheduling jitter: no grace."""
    core = booted()
    assert core.tick(0.1 + 2 * core.checkin_step_s) == []
    assert core.pauses == 0


def test_a_first_start_may_end_dormant_and_a_wake_starts_it_for_good() -> None:
    """Boot's starts may sleep: DORMANT_EXIT then is ``dormant`` (ready, nothing restarted,
    no crash counted); ``wake`` starts it again, and that start may not sleep: the same
    exit status is then a crash like any other."""
    core = SupervisorCore(SPEC)
    core.boot(0.0)
    core.spawned("a", 100, 0.0)
    core.spawned("b", 101, 0.0)
    core.ready("a", 100, 0.1)
    effects = core.exited("b", 101, sup.DORMANT_EXIT, 0.2)
    assert published(effects) == [("actor.exited", "b")]
    assert not [e for e in effects if isinstance(e, Spawn)]
    b = core.children["b"]
    assert b.state == "dormant" and b.restarts == 0 and core.all_ready()
    assert advance(core, 4.0) == []  # asleep: no deadline, no restart
    assert core.wake("a", 4.0) == []  # running: nothing to do
    assert core.wake("b", 4.0) == [Spawn("b")]
    assert b.state == "starting" and b.last_exit is None and not core.all_ready()
    core.spawned("b", 102, 4.0)
    effects = core.exited("b", 102, sup.DORMANT_EXIT, 4.5)
    assert b.state == "backoff" and b.restarts == 1
    assert published(effects) == [("actor.exited", "b"), ("actor.restarting", "b")]


def test_a_dormant_child_is_left_alone_by_a_peers_crash_and_started_by_an_operator() -> None:
    """rest_for_one stops what runs after a crashed child, not what sleeps there; an
    operator restart of a dormant child starts it."""
    spec = replace(
        SPEC,
        children=(ChildSpec("a", "m.a"), ChildSpec("b", "m.b")),
        strategy="rest_for_one",
    )
    core = SupervisorCore(spec)
    core.boot(0.0)
    core.spawned("a", 100, 0.0)
    core.spawned("b", 101, 0.0)
    core.ready("a", 100, 0.1)
    core.exited("b", 101, sup.DORMANT_EXIT, 0.2)
    effects = core.exited("a", 100, 1, 20.0)
    assert not [e for e in effects if isinstance(e, Terminate)]
    core.spawned("a", 103, 20.0)
    assert [e for e in core.ready("a", 103, 20.1) if isinstance(e, Spawn)] == []
    assert core.children["b"].state == "dormant"
    assert Spawn("b") in core.restart("b", 30.0)


def test_orcad_stopping_leaves_a_dormant_child_stopped() -> None:
    core = SupervisorCore(SPEC)
    core.boot(0.0)
    core.spawned("b", 101, 0.0)
    core.exited("b", 101, sup.DORMANT_EXIT, 0.2)
    core.begin_stop()
    assert core.children["b"].state == "stopped" and core.wake("b", 1.0) == []
