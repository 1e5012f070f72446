"""What the UI tells the user: the actors' health (the banner, the footer), the agents
that became blocked or done (a notification, the bell, an OSC 9), and the held
permission requests (issue 27; ``actors/ui/approvals.py``).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

from actors.ui import health
from actors.ui.approvals import Approvals, answer_dialog
from actors.ui.backend import ACTORS
from actors.ui.base import AppBase
from actors.ui.widgets import osc9
from orca.wire.errors import OrcaError


class StatusMixin(AppBase):
    """Health, banner, footer, notifications and permission answers."""

    def actor_health(self) -> dict[str, str]:
        """Per actor the UI follows: ``up``, ``down`` (silent), or orcad's word for it
        (``backoff``, ``starting``, ``failed``) while orcad answers and says it is not
        running (``actors/ui/health.py``)."""
        backend = self.backend
        return health.followed_health(ACTORS, backend.alive, backend.service)

    def service_health(self) -> dict[str, str]:
        """Every process ``orca status`` reports (orcad, the keeper, orcad's children)
        and its state: what the footer shows."""
        backend = self.backend
        return health.service_health(ACTORS, backend.alive, backend.service)

    def _render_health(self) -> None:
        every = self.service_health()
        for actor, state in every.items():
            previous = self._health.get(actor)
            if previous is not None and previous != state:
                self.health_log.append((actor, state))
            self._health[actor] = state
        # The banner is about what the UI shows: the actors it follows.
        followed = {actor: every[actor] for actor in ACTORS}
        banner = self.query_one("#banner", Static)
        down = [a for a, state in followed.items() if state != "up"]
        if len(down) == len(ACTORS):
            message = (
                "Orca service is not running (start it with `orca up`); reconnecting by itself…"
            )
        elif down:
            names = ", ".join(f"{health.shown_name(a)} ({followed[a]})" for a in down)
            message = f"{names}: showing what the UI last saw (stale); reconnecting…"
        else:
            message = ""
        if self.guest.error is not None and not self.guest.stopping:
            message = "orca ui: internal error, the view is frozen (see ui.log); restart orca ui"
        banner.update(message)
        banner.set_class(bool(message), "shown")
        needing = sum(1 for w in self.items() for light in w.lights if light.needs_me)
        hint = (
            "^G: leader (n new, v/h split, t tab, x close, z zoom, j next, a ack, d review,"
            " f search, e runs, p palette, s/u group, m move tab, g next group)"
        )
        leader = "LEADER… " if self.leader_pending else ""
        need = f"{needing} need you · " if needing else ""
        asks = self.approvals.status_text(self.pane_name) if self.approvals else ""
        asks = f"{asks} · " if asks else ""
        error = f" · {self.last_error}" if self.last_error else ""
        # Text, not markup: an error or a command in an ask may hold brackets.
        self.query_one("#status", Static).update(
            Text.assemble(f"{leader}{need}{asks}", health.footer_health(every), f"{error} · {hint}")
        )

    def pane_name(self, pane_key: str) -> str:
        """The worktree whose agent runs in ``pane_key`` (the pane key if none shows it)."""
        for item in self.items():
            if any(light.pane_key == pane_key for light in item.lights):
                return item.name
        return pane_key

    def action_answer_permission(self, request_id: str) -> None:
        approvals = self.approvals
        request = (
            next((r for r in approvals.pending if r.request_id == request_id), None)
            if approvals
            else None
        )
        if approvals is None or request is None:
            return

        def answered(behavior: Any) -> None:
            if behavior is not None:
                self.guest.start_soon(self._answer_permission, approvals, request_id, behavior)

        self.push_screen(answer_dialog(request, self.pane_name(request.pane_key)), answered)

    async def _answer_permission(
        self, approvals: Approvals, request_id: str, behavior: Any
    ) -> None:
        try:
            self.notify(await approvals.answer(request_id, behavior))
        except OrcaError as exc:
            self.report(exc.message)

    def banner_text(self) -> str:
        return str(self.query_one("#banner", Static).render())

    def _notify_transitions(self) -> None:
        """Notify (and ring) when an agent *becomes* blocked or done. What the agents
        were doing when the UI started is the baseline, taken once hooks' rows are in:
        before, the first refresh (no rows yet) was the baseline, so every agent left
        blocked or done was announced again at every start."""
        if not self.backend.loaded("hooks"):
            return
        lights = {light.pane_key: light.state for w in self.items() for light in w.lights}
        previous, self._lights = self._lights, lights
        if previous is None:
            return
        for w in self.items():
            for light in w.lights:
                if (
                    light.state in ("blocked", "done")
                    and previous.get(light.pane_key) != light.state
                ):
                    message = f"{light.agent} in {w.name} is {light.state}"
                    if light.state == "blocked" and light.detail:  # where to answer it
                        message += f": {light.detail}"
                    self.notify(
                        message,
                        severity="warning" if light.state == "blocked" else "information",
                    )
                    if self.bell_enabled:
                        self.bell()
                        self.write_to_terminal(osc9(f"orca: {message}"))

    def write_to_terminal(self, data: str) -> None:
        """Raw output for the real terminal (a desktop notification), between frames."""
        driver = self._driver
        if driver is not None:
            driver.write(data)
            driver.flush()

    def pane_bell(self, pane_key: str) -> None:
        if pane_key != self.focused_pane and self.bell_enabled:
            self.bell()
