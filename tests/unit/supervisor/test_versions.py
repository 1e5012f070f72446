"""Each actor's version and build in ``sup.status`` (issue 13: "the new code is running")."""

from __future__ import annotations

from actors.supervisor.config import ChildSpec, SupervisorSpec
from actors.supervisor.core import SupervisorCore

SPEC = SupervisorSpec(children=(ChildSpec("a", "m.a"),), backoff_initial_s=0.25)


def row(core: SupervisorCore, now: float) -> tuple[int | None, str | None, str | None]:
    [status] = core.statuses(now)
    return status.pid, status.version, status.build


def test_the_status_row_shows_what_the_running_process_reported_ready_with() -> None:
    core = SupervisorCore(SPEC)
    core.boot(0.0)
    core.spawned("a", 100, 0.0)
    assert row(core, 0.1) == (100, None, None)  # starting: nothing reported yet
    core.ready("a", 100, 0.2, version="0.1.0", build="aaaaaaaaaaaa")
    assert row(core, 0.3) == (100, "0.1.0", "aaaaaaaaaaaa")
    core.exited("a", 100, -9, 1.0)
    assert row(core, 1.0) == (None, None, None)  # nothing runs: no version to show
    core.tick(1.0)
    core.spawned("a", 101, 1.1)
    core.ready("a", 101, 1.2, version="0.1.0", build="bbbbbbbbbbbb")
    assert row(core, 1.3) == (101, "0.1.0", "bbbbbbbbbbbb")


def test_a_runtime_too_old_to_report_a_build_shows_none() -> None:
    core = SupervisorCore(SPEC)
    core.boot(0.0)
    core.spawned("a", 100, 0.0)
    core.ready("a", 100, 0.2)  # an older orca.actor.app: no version fields sent
    assert row(core, 0.3) == (100, None, None)
