"""``orca ui``'s run view (leader ``e``): orch's runs, one run's variants side by side, and
merging the best one from there (issue 26, seed 02 §12-13).

Two pieces, thin over orch's ops (``orca/contracts/orch.py``) and gitwatch's merge
preview:

* ``runs_follower.RunsFollower`` (trio side, run by the backend) holds the orch client
  and follows ``run.changed``: it tells an open :class:`RunsScreen` which run moved;
  nothing is read while no screen is open. An orch that is down leaves the screen on
  its last answer, with the error said.
* :class:`RunsScreen`: the runs, newest first, on the left; the highlighted run's
  variants in columns (``runs_model``); under them the selected variant's terminal as
  ptyd holds it now (its attach snapshot, drawn once per change, not a live stream);
  ``a`` attaches to it raw (``orca term attach``, as the zoom does; Ctrl-] returns),
  Enter or ``o`` opens its pane when the layout has one. ``m`` merges the selected
  variant: gitwatch's ``worktree.mergePreview`` first, shown in a question (conflicts
  listed: refused, no question asked); ``y`` merges, ``s`` squashes, ``r`` rebases,
  through orch's ``run.merge`` (which previews again and archives the other
  variants). ``c`` runs the run's check now. Under the runs, the automations (issue
  38): each one's schedule, next due time and last firing (the run it started, or why
  none did), read again on ``auto.changed``/``auto.fired``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import trio
from rich.text import Text
from textual.app import ComposeResult
from textual.await_complete import AwaitComplete
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, HorizontalScroll, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from actors.ui.dialogs import ChoiceScreen
from actors.ui.runs_follower import RunsFollower
from actors.ui.runs_model import (
    automations_text,
    column_text,
    merge_question,
    run_line,
    variant_columns,
)
from orca.contracts import gitwatch, orch
from orca.wire.errors import OrcaError

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel
    from textual.screen import Screen

    from actors.ui.backend import Backend
    from actors.ui.runtime import TrioGuest


class RunsHost(Protocol):
    """What the run view asks of the app (``OrcaApp``): its runtime and mirrors, a
    variant's pane shown or its terminal attached, a screen, a notice."""

    guest: TrioGuest
    backend: Backend

    def poke(self, *, view: bool = False) -> None: ...
    def show_pane(self, pane_key: str) -> bool: ...
    def attach_raw(self, session_id: str) -> None: ...
    def notify(self, message: str, *, severity: SeverityLevel = "information") -> None: ...
    def push_screen(
        self, screen: Screen[Any], callback: Callable[[Any], None] | None = None
    ) -> Any: ...


# A run's agents move several times a second while they start; the view is read again
# at most this often (a burst of run.changed is one reload).
RELOAD_GAP_S = 0.2


class RunsScreen(ModalScreen[None]):
    """Every run; the highlighted one's variants side by side; merge from here."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "close"),
        Binding("left", "select_variant(-1)", "previous variant", show=False),
        Binding("right", "select_variant(1)", "next variant", show=False),
        Binding("m", "merge", "merge"),
        Binding("c", "check", "check"),
        Binding("o", "open_pane", "open pane"),
        Binding("a", "attach", "attach"),
    ]
    DEFAULT_CSS = """
    RunsScreen { align: center middle; }
    RunsScreen > Vertical { width: 96%; height: 92%; border: round $accent; padding: 0 1; background: $surface; }
    #runs-body { height: 1fr; }
    #runs-left { width: 38; height: 1fr; }
    #runs-list { height: 1fr; }
    #automations { height: auto; max-height: 10; border-top: solid $panel; }
    #run-detail { width: 1fr; height: 1fr; padding: 0 1; }
    #run-title { height: auto; max-height: 3; }
    #variants { height: auto; max-height: 16; }
    .variant-col { width: 1fr; min-width: 22; height: auto; border: round $panel; }
    .variant-col.selected { border: round $accent; }
    #variant-preview { height: 1fr; border: round $panel; }
    #runs-status { height: 1; color: $text-muted; }
    """

    def __init__(self, app: RunsHost) -> None:
        super().__init__()
        self.orca = app
        self.follower: RunsFollower = app.backend.runs
        self.runs: list[orch.RunSummary] = []
        self.current: str | None = None  # the highlighted run's id
        self.shown: orch.RunInfo | None = None
        self.selected = 0  # the selected variant's index in ``shown``
        self.loads = 0  # answers shown (tests wait on it)
        self.previews = 0
        self._wake: trio.Event | None = None
        self._scope: trio.CancelScope | None = None
        self._stale: set[str] = {""}  # runs to re-read ("": the list, and the shown run)
        self.closed = False
        self.tasks_done = 0  # trio tasks of this screen that ended (tests wait on it)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(
                "Runs: one task, N agents (←/→ variant · m merge · c check · o open pane · a attach · Esc)",
                markup=False,
            )
            with Horizontal(id="runs-body"):
                with Vertical(id="runs-left"):
                    yield OptionList(id="runs-list")
                    yield Static("", id="automations", markup=False)
                with Vertical(id="run-detail"):
                    yield Static("", id="run-title", markup=False)
                    yield HorizontalScroll(id="variants")
                    with VerticalScroll(id="variant-preview"):
                        yield Static("", id="variant-screen", markup=False)
            yield Label("loading…", id="runs-status", markup=False)

    # -- following orch ---------------------------------------------------------------
    def on_mount(self) -> None:
        self.follower.listeners.add(self._changed)
        self.query_one("#runs-list", OptionList).focus()
        self._start(self._follow)

    def dismiss(self, result: None = None) -> AwaitComplete:
        # Closed from here on: the screen's widgets are removed before on_unmount runs,
        # and a task that queries one meanwhile must end quietly (``_start``).
        self.closed = True
        return super().dismiss(result)

    def on_unmount(self) -> None:
        self.closed = True
        self.follower.listeners.discard(self._changed)
        if self._scope is not None:
            self.orca.guest.run_sync_soon(self._scope.cancel)

    def _start(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Run ``fn(*args)`` as a trio task of this screen: one that finds the screen
        closed under it (Esc while orch answered) ends quietly, not the UI's runtime."""

        async def guarded() -> None:
            try:
                await fn(*args)
            except NoMatches:
                if not self.closed:
                    raise
            finally:
                self.tasks_done += 1
                self.orca.poke()

        self.orca.guest.start_soon(guarded)

    def _changed(self, run: str) -> None:
        """A listener: called on the trio side (the follower's subscriber)."""
        self._stale.add(run)
        if self._wake is not None:
            self._wake.set()

    def _poke_soon(self, run: str = "") -> None:
        """The same, from the asyncio side (a key, a highlight)."""
        self.orca.guest.run_sync_soon(self._changed, run)

    async def _follow(self) -> None:
        with trio.CancelScope() as scope:
            self._scope = scope
            while True:
                self._wake = trio.Event()
                stale, self._stale = self._stale, set()
                if stale:
                    await self._reload(stale)
                    await trio.sleep(RELOAD_GAP_S)  # rate limit: the next reload sees them all
                    continue
                await self._wake.wait()

    async def _reload(self, stale: set[str]) -> None:
        try:
            self._show_list((await self.follower.list()).runs)  # its lines count states
            automations = (await self.follower.automations()).automations
            self.query_one("#automations", Static).update(automations_text(automations))
            if self.current is not None and (stale & {"", self.current}):
                info = await self.follower.show(self.current)
                if info.run == self.current:
                    self._show_run(info)
                    await self._preview()
        except OrcaError as exc:
            self._status(f"orch did not answer: {exc.message}")
        self.loads += 1
        self.orca.poke()

    # -- drawing ------------------------------------------------------------------------
    def _show_list(self, runs: list[orch.RunSummary]) -> None:
        self.runs = runs
        listing = self.query_one("#runs-list", OptionList)
        listing.clear_options()
        listing.add_options([Option(run_line(r), id=r.run) for r in runs])
        if not runs:
            self.current, self.shown = None, None
            self._status('no runs yet: orca run new REPO "task" --agents claude:2,codex:1')
            return
        ids = [r.run for r in runs]
        if self.current not in ids:
            self.current = ids[0]
        listing.highlighted = ids.index(self.current)
        if self.loads == 0:
            self._status("")  # "loading…" no more; the line is kept for what the keys did

    def _show_run(self, info: orch.RunInfo) -> None:
        if self.shown is None or self.shown.run != info.run:
            self.selected = 0
        self.shown = info
        self.selected = min(self.selected, max(len(info.variants) - 1, 0))
        title = Text(no_wrap=False)
        title.append(f"{info.name}", style="bold")
        title.append(f"  {info.repo} · base {info.base or '(default)'} · {info.state}")
        if info.merged_variant:
            title.append(
                f" · merged {info.merged_variant} ({info.merge_commit[:10]})", style="green"
            )
        title.append(f"\n{info.prompt.splitlines()[0] if info.prompt else ''}", style="grey62")
        self.query_one("#run-title", Static).update(title)
        self._draw_columns()

    def _draw_columns(self) -> None:
        info = self.shown
        row = self.query_one("#variants", HorizontalScroll)
        columns = variant_columns(info) if info is not None else []
        widgets = list(row.query(".variant-col").results(Static))
        if len(widgets) != len(columns):
            row.remove_children()
            widgets = [Static("", classes="variant-col", markup=False) for _ in columns]
            row.mount_all(widgets)
        merged = info.merged_variant if info is not None else ""
        for i, (widget, column) in enumerate(zip(widgets, columns, strict=True)):
            widget.update(
                column_text(column, selected=i == self.selected, merged=column.variant == merged)
            )
            widget.set_class(i == self.selected, "selected")
            if i == self.selected:
                widget.scroll_visible()  # many variants: the row scrolls to the selected one

    def selected_variant(self) -> orch.VariantInfo | None:
        if self.shown is None or not self.shown.variants:
            return None
        return self.shown.variants[self.selected]

    async def _preview(self) -> None:
        """The selected variant's terminal as ptyd holds it now (its attach snapshot)."""
        from actors.ui.screen import PaneScreen

        variant = self.selected_variant()
        target = self.query_one("#variant-screen", Static)
        if variant is None:
            target.update("")
            return
        row = (
            (self.orca.backend.sessions or {}).get(variant.session_id)
            if variant.session_id
            else None
        )
        if row is None or not row.running:
            where = f"handle {variant.handle}" if variant.handle else "no terminal yet"
            target.update(
                Text(f"({variant.variant}: its terminal is not running; {where})", style="grey62")
            )
            self.previews += 1
            return
        try:
            data, _end = await self.orca.backend.screen(variant.session_id)
        except OrcaError as exc:
            target.update(Text(f"(no screen: {exc.message})", style="grey62"))
            return
        screen = PaneScreen(row.cols, row.rows)
        try:
            screen.feed(data)
            lines = screen.lines(show_cursor=False)
        finally:
            screen.close()
        while lines and not lines[-1].plain.strip():
            lines.pop()  # the rows below the last output: nothing to show
        for line in lines:
            line.rstrip()  # in place: the screen model they came from is closed
        target.update(Text("\n").join(lines))
        self.previews += 1

    def _status(self, text: str) -> None:
        self.query_one("#runs-status", Label).update(text)

    def _tell(self, text: str, *, error: bool = False) -> None:
        """A merge's outcome: on the status line, or as a notice once the view closed."""
        if self.closed:
            self.orca.notify(text, severity="error" if error else "information")
        else:
            self._status(text)

    # -- keys ---------------------------------------------------------------------------
    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if event.option.id is not None and event.option.id != self.current:
            self.current = event.option.id
            self._poke_soon(self.current)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_open_pane()

    def action_select_variant(self, step: int) -> None:
        if self.shown is None or not self.shown.variants:
            return
        self.selected = (self.selected + step) % len(self.shown.variants)
        self._draw_columns()
        self._start(self._preview)

    def action_open_pane(self) -> None:
        variant = self.selected_variant()
        if variant is None:
            return
        if variant.pane_key and self.orca.show_pane(variant.pane_key):
            self.dismiss(None)
            return
        if variant.handle:
            self._status(f"{variant.variant} has no pane here: orca term attach {variant.handle}")
        else:
            self._status(f"{variant.variant} has no terminal yet")

    def action_attach(self) -> None:
        """The variant's terminal, raw (``orca term attach``); Ctrl-] comes back here."""
        variant = self.selected_variant()
        if variant is None:
            return
        row = (self.orca.backend.sessions or {}).get(variant.session_id)
        if row is None or not row.running:
            self._status(f"{variant.variant}'s terminal is not running")
            return
        self.orca.attach_raw(variant.session_id)
        self._start(self._preview)

    def action_check(self) -> None:
        if self.shown is None:
            return
        if not self.shown.check:
            self._status("this run has no check command (orca run new ... --check CMD)")
            return
        self._status(f"running {self.shown.check!r} in every variant…")
        self._start(self._check, self.shown.run)

    async def _check(self, run: str) -> None:
        try:
            info = await self.follower.check(run, None)
        except OrcaError as exc:
            self._status(f"check not run: {exc.message}")
            return
        if info.run == self.current:
            self._show_run(info)
        self._status("check done")
        self.orca.poke()

    def action_merge(self) -> None:
        variant = self.selected_variant()
        if self.shown is None or variant is None:
            return
        if not variant.worktree_id:
            self._status(f"{variant.variant} has no worktree yet")
            return
        self._status(f"previewing the merge of {variant.variant}…")
        self._start(self._ask_merge, self.shown, variant)

    async def _ask_merge(self, run: orch.RunInfo, variant: orch.VariantInfo) -> None:
        args = gitwatch.MergePreviewArgs(worktree=variant.worktree_id, into=run.base or None)
        try:
            preview: gitwatch.MergePreview = await self.orca.backend.invoke(
                "gitwatch", gitwatch.WORKTREE_MERGE_PREVIEW, args
            )
        except OrcaError as exc:
            self._status(f"no preview: {exc.message}")
            return
        if self.closed:
            return  # closed while gitwatch answered: no question over the main screen
        ask = merge_question(run, variant, preview)
        self._status(ask.refusal and f"not merged: {ask.refusal}")
        if ask.refusal:
            choices: list[tuple[str, str, orch.MergeMode | None]] = [("n", "close", None)]
        else:
            choices = [("y", "merge commit", "merge"), ("s", "squash", "squash"),
                       ("r", "rebase", "rebase"), ("n", "no", None)]  # fmt: skip

        def answered(mode: orch.MergeMode | None) -> None:
            if mode is not None:
                self._status(f"merging {variant.variant} ({mode})…")
                self._start(self._merge, run.run, variant.variant, mode)

        self.orca.push_screen(
            ChoiceScreen(ask.question, choices, default=None, cancel=None, details=ask.details),
            answered,
        )
        self.orca.poke()

    async def _merge(self, run: str, variant: str, mode: orch.MergeMode) -> None:
        try:
            merged = await self.follower.merge(run, variant, mode)
        except OrcaError as exc:
            self._tell(f"{variant} not merged: {exc.message}", error=True)
            return
        archived = f"; archived {', '.join(merged.archived)}" if merged.archived else ""
        self._tell(f"merged {merged.variant} into {merged.into}: {merged.commit[:10]}{archived}")
        self._changed(run)
        self.orca.poke()


def open_runs(app: RunsHost) -> None:
    """Leader ``e``: the run view."""
    app.push_screen(RunsScreen(app))
