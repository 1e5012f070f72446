"""``orca ui`` and the vault: what each agent has cost, on its tab; a transcript search.

Two pieces, both thin over the vault's ops (``orca/contracts/vault.py``):

* :class:`VaultFollower` (trio side, run by the backend) keeps ``by_pane``: the usage of
  every pane the vault knows (``vault.usage {by: pane}``), asked again after the
  vault's ``vault.changed`` events, at most every :data:`REFRESH_GAP_S` (an agent
  streaming commits several times a second; the label needs no more). A vault that is
  down leaves the last figures; no vault at all leaves the labels as they were.
* :func:`tab_notes` turns those figures into the small note a tab's label carries
  (``$0.42``; ``12k tok`` when its model has no price; ``$0.42+`` when part has none);
  :class:`SearchScreen` is the search view (leader ``f``): a query line, the hits
  newest first (``(unbound)`` when no hook bound the session to a pane), Enter on a hit
  opens its agent's pane if that pane is live, else says why not.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import trio
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from orca.actor import RpcClient, open_rpc_client
from orca.actor.subscriber import Subscriber
from orca.contracts import vault
from orca.model import tab_groups
from orca.model.session import WorkspaceSessionState
from orca.paths import OrcaPaths
from orca.wire.envelope import Event
from orca.wire.errors import OrcaError

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel
    from textual.screen import Screen

    from actors.ui.runtime import TrioGuest
    from orca.contracts import ptyd


class SearchBackend(Protocol):
    """The mirrors the search reads (``actors/ui/backend.py``'s ``Backend``)."""

    @property
    def vault(self) -> VaultFollower: ...
    def session_for_pane(self, pane_key: str) -> ptyd.SessionRow | None: ...


class SearchHost(Protocol):
    """What the search view asks of the app (``OrcaApp``): its runtime and mirrors,
    a hit's pane shown, a screen, a notice."""

    guest: TrioGuest

    @property
    def backend(self) -> SearchBackend: ...
    def poke(self, *, view: bool = False) -> None: ...
    def show_pane(self, pane_key: str) -> bool: ...
    def notify(self, message: str, *, severity: SeverityLevel = "information") -> None: ...
    def push_screen(
        self, screen: Screen[Any], callback: Callable[[Any], None] | None = None
    ) -> Any: ...


# Usage is asked again at most this often (a burst of commits is one refresh).
REFRESH_GAP_S = 1.0
# ... and at least this often (a lost event, a vault restarted without one).
REFRESH_EVERY_S = 30.0
CALL_TIMEOUT_S = 5.0
SEARCH_LIMIT = 50


class VaultFollower:
    def __init__(self, paths: OrcaPaths, on_change: Callable[[str], None]) -> None:
        self.paths = paths
        self._on_change = on_change
        self.by_pane: dict[str, vault.UsageRow] = {}
        self.client: RpcClient | None = None
        self._poke = trio.Event()
        self._epoch: str | None = None
        self.refreshes = 0

    def _heard(self, _event: Event, _data: Any = None) -> None:
        self._poke.set()

    async def run(self) -> None:
        endpoint = self.paths.ipc_endpoint(vault.CONTRACT.actor, "rpc")
        async with (
            open_rpc_client(endpoint, timeout=CALL_TIMEOUT_S) as client,
            trio.open_nursery() as nursery,
        ):
            self.client = client
            changes = Subscriber(
                self.paths.ipc_endpoint(vault.CONTRACT.actor, "pub"),
                (vault.CHANGED,),
                self._heard,
                consumer="ui<-vault",
                on_other=self._first_heartbeat,
            )
            nursery.start_soon(changes.run)
            while True:
                self._poke = trio.Event()
                await self.refresh(client)
                with trio.move_on_after(REFRESH_EVERY_S):
                    await self._poke.wait()
                await trio.sleep(REFRESH_GAP_S)  # rate limit: the next refresh sees them all

    def _first_heartbeat(self, event: Event) -> None:
        """A vault that (re)started: its figures may differ from the last ones read."""
        if event.epoch != self._epoch:
            self._poke.set()
        self._epoch = event.epoch

    async def refresh(self, client: RpcClient) -> None:
        try:
            report: vault.UsageReport = await client.invoke(vault.USAGE, vault.UsageArgs(by="pane"))
        except OrcaError:
            return  # the vault is down or busy: the last figures stay
        self.refreshes += 1
        rows = {row.key: row for row in report.rows if row.key}
        if rows != self.by_pane:
            self.by_pane = rows
            self._on_change("vault")

    async def search(self, args: vault.SearchArgs) -> vault.SearchPage:
        if self.client is None:
            raise OrcaError("the vault is not reachable yet")
        page: vault.SearchPage = await self.client.invoke(vault.SEARCH, args)
        return page


# -- tab labels -----------------------------------------------------------------------
def _tokens(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}k" if n >= 1e3 else str(n)


def cost_note(rows: Iterable[vault.UsageRow]) -> str:
    """What a tab shows of its panes' usage ("" when nothing was recorded)."""
    rows = list(rows)
    if not rows:
        return ""
    priced = [r.cost_usd for r in rows if r.cost_usd is not None]
    unpriced = any(r.unpriced_models for r in rows)
    if not priced:
        return f"{_tokens(sum(r.total_tokens for r in rows))} tok"
    cost = sum(priced)
    text = "<$0.01" if cost < 0.005 else f"${cost:.2f}"
    return text + ("+" if unpriced else "")


def tab_notes(
    session: WorkspaceSessionState, tabs: Iterable[Any], by_pane: Mapping[str, vault.UsageRow]
) -> dict[str, str]:
    """Tab id → the cost note of its panes' agents."""
    if not by_pane:
        return {}
    notes = {}
    for tab in tabs:
        note = cost_note(by_pane[k] for k in tab_groups.pane_keys(session, tab.id) if k in by_pane)
        if note:
            notes[tab.id] = note
    return notes


# -- the search view ----------------------------------------------------------------------
def hit_text(hit: vault.SearchHit) -> Text:
    when = time.strftime("%m-%d %H:%M", time.localtime(hit.ts_ms / 1000)) if hit.ts_ms else "-"
    where = hit.worktree if hit.worktree_id else "(unattributed)"
    if hit.worktree_id and not hit.bound:
        where += " (unbound)"
    text = Text()
    text.append(f"{when} {hit.agent:<6} ", style="grey62")
    text.append(f"{where} ", style="bold")
    text.append(f"{hit.kind}: ", style="grey62")
    text.append(hit.snippet)
    return text


class SearchScreen(ModalScreen[vault.SearchHit | None]):
    """Search every agent's transcripts; Enter on a hit returns it (the app opens its
    pane), Escape returns nothing."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "close")]
    DEFAULT_CSS = """
    SearchScreen { align: center middle; }
    SearchScreen > Vertical { width: 90%; height: 80%; border: round $accent; padding: 0 1; background: $surface; }
    #vault-results { height: 1fr; }
    #vault-status { height: 1; color: $text-muted; }
    """

    def __init__(self, app: SearchHost) -> None:
        super().__init__()
        self.orca = app
        self.hits: list[vault.SearchHit] = []
        self.cursor: str | None = None
        self.query_text = ""
        self.searches = 0  # answers shown (tests wait on it)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Search transcripts (Enter: search; on a hit: open its pane)", markup=False)
            yield Input(
                placeholder="words that must all occur: src/app.py fix-login", id="vault-query"
            )
            yield OptionList(id="vault-results")
            yield Label("", id="vault-status", markup=False)

    def on_mount(self) -> None:
        self.query_one("#vault-query", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        query = event.value.strip()
        if not query:
            return
        self.query_text, self.hits, self.cursor = query, [], None
        self.query_one("#vault-results", OptionList).clear_options()
        self._status("searching…")
        self.orca.guest.start_soon(self._search, query, None)

    async def _search(self, query: str, cursor: str | None) -> None:
        args = vault.SearchArgs(query=query, limit=SEARCH_LIMIT, cursor=cursor)
        try:
            page = await self.orca.backend.vault.search(args)
        except OrcaError as exc:
            self._status(f"not searched: {exc.message}")
            return
        if query != self.query_text:
            return  # a newer search was asked meanwhile
        results = self.query_one("#vault-results", OptionList)
        if cursor is not None and results.option_count:
            results.remove_option_at_index(results.option_count - 1)  # the "more" line
        start = len(self.hits)
        self.hits.extend(page.hits)
        results.add_options(
            [Option(hit_text(h), id=str(start + i)) for i, h in enumerate(page.hits)]
        )
        self.cursor = page.next_cursor
        if self.cursor:
            results.add_option(Option(Text("… more (Enter)", style="italic"), id="more"))
        count = len(self.hits)
        self._status(
            f"{count} hit{'s' if count != 1 else ''}" + (", more below" if self.cursor else "")
        )
        if count and start == 0:
            results.highlighted = 0
            results.focus()
        self.searches += 1
        self.orca.poke()

    def _status(self, text: str) -> None:
        self.query_one("#vault-status", Label).update(text)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id == "more":
            if self.cursor:
                self.orca.guest.start_soon(self._search, self.query_text, self.cursor)
            return
        if event.option.id is not None:
            self.dismiss(self.hits[int(event.option.id)])


def open_search(app: SearchHost) -> None:
    """Leader ``f``: the search view; the chosen hit's pane is opened if live."""

    def chosen(hit: vault.SearchHit | None) -> None:
        if hit is None:
            return
        if not hit.pane_key:
            app.notify(
                "no pane ran that session (unbound: started outside orca ui or before its hooks)"
            )
            return
        row = app.backend.session_for_pane(hit.pane_key)
        if row is None or not row.running or not app.show_pane(hit.pane_key):
            app.notify("that agent's pane is not live any more")

    app.push_screen(SearchScreen(app), chosen)
