"""The footer's health (``actors/ui/health.py``): one light per process ``orca status``
reports, driven by orcad's data; before, five names were hard-coded (issue 32)."""

from __future__ import annotations

import os
import signal
from typing import Any

from support.ui_pilot import ready
from textual.widgets import Static

from actors.ui.app import OrcaApp
from actors.ui.backend import ACTORS
from actors.ui.health import footer_health, service_health
from actors.ui.mirrors import ServiceView
from orca.contracts import supervisor as sup
from orca.paths import resolve_paths

ALL_UP = dict.fromkeys(ACTORS, True)
SLEEPERS = ("orch", "gateway", "vault")


def status(name: str, state: sup.ActorState = "running") -> sup.ActorStatus:
    return sup.ActorStatus(
        name=name, module=f"actors.{name}", pid=None, state=state, restarts=0, uptime=None,
        last_exit=None,
    )  # fmt: skip


def view(*actors: sup.ActorStatus, keeper: int | None = 7) -> ServiceView:
    return ServiceView({a.name: a for a in actors}, keeper)


def test_every_process_orcad_lists_has_a_light_in_its_order() -> None:
    """orcad and the keeper first, then orcad's children as it lists them, those the UI
    does not follow (orch, vault) included."""
    names = ("store", "hooks", "ptyd", "gitwatch", "orch", "gateway", "vault")
    health = service_health(ACTORS, ALL_UP, view(*map(status, names)))
    assert list(health) == ["supervisor", "keeper", *names]
    assert set(health.values()) == {"up"}
    assert footer_health(health).plain == "orcad:up " + "•" * 8 + " 8/8 up"


def test_a_child_not_running_is_named_with_orcads_word() -> None:
    """A followed actor that is silent is down; another child is what orcad says; no
    keeper pid is a keeper down."""
    service = view(status("store"), status("ptyd"), status("vault", "backoff"), keeper=None)
    alive = {**ALL_UP, "ptyd": False}
    health = service_health(ACTORS, alive, service)
    assert health["ptyd"] == "down" and health["vault"] == "backoff"
    assert health["keeper"] == "down"
    assert footer_health(health).plain == (
        "orcad:up " + "•" * 6 + " 3/6 up keeper:down ptyd:down vault:backoff"
    )


def test_a_dormant_child_is_no_fault_and_is_named_apart() -> None:
    """orch and the gateway sleep until asked (issue 36): grey dots, not counted among
    what should be up, named once at the end."""
    service = view(status("store"), status("orch", "dormant"), status("gateway", "dormant"))
    health = service_health(ACTORS, ALL_UP, service)
    assert health["orch"] == health["gateway"] == "dormant"
    assert footer_health(health).plain == (
        "orcad:up " + "•" * 7 + " 5/5 up (orch, gateway: dormant until asked)"
    )


def test_while_orcad_is_silent_what_only_it_reports_is_unknown() -> None:
    """Children only orcad reports, and the keeper, are unknown while it is silent; the
    followed ones keep their own heartbeats."""
    service = view(status("store"), status("orch"))
    health = service_health(ACTORS, {**ALL_UP, "supervisor": False}, service)
    assert health["supervisor"] == "down"
    assert health["orch"] == "unknown" and health["keeper"] == "unknown"
    assert health["store"] == "up"
    assert footer_health(health).plain == (
        "orcad:down " + "•" * 6 + " 4/6 up keeper:unknown orch:unknown"
    )


def test_the_footer_shows_every_actor_orca_status_lists(tree: Any, drive: Any) -> None:
    """The footer names orcad and counts what `orca status --json` lists under it (the
    keeper, every child); a kill -9 of the vault, an actor the UI does not follow, is
    shown there until orcad has it running again. The vault was dormant until the UI
    asked it for the tabs' costs; orch and the gateway, asked by nobody, still are."""
    listed = tree.user.json("status")
    expected = ["supervisor", "keeper", *(a["handle"] for a in listed["actors"])]
    assert {"orch", "vault", "gateway"} <= set(expected)
    asleep = {a["handle"]: a["state"] for a in listed["actors"] if a["handle"] in SLEEPERS}
    assert asleep == dict.fromkeys(SLEEPERS, "dormant")

    def footer() -> str:
        return str(app.query_one("#status", Static).render())

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        dots = len(expected) - 1  # orcad is named, the others counted
        count = dots - 2  # orch and the gateway sleep on
        await app.wait_for(
            lambda: f"orcad:up {'•' * dots} {count}/{count} up (orch, gateway: dormant" in footer(),
            10,
        )
        assert sorted(app.service_health()) == sorted(expected)
        vault = app.backend.actors["vault"].pid
        assert vault is not None
        since = len(app.health_log)
        os.kill(vault, signal.SIGKILL)
        await app.wait_for(lambda: f"{count - 1}/{count} up vault:" in footer(), 20)
        assert any(a == "vault" and s != "up" for a, s in app.health_log[since:])
        await app.wait_for(lambda: app.backend.actors["vault"].pid not in (None, vault), 30)
        await app.wait_for(lambda: f"{count}/{count} up" in footer(), 30)

    app = OrcaApp(resolve_paths(), bell=False)
    drive(app, scenario)
