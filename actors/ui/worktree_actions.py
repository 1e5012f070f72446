"""What a user does to a worktree from the sidebar: rename it, remove it (the CLI's
rules, asked: ``actors/ui/removal.py``), and review its changes against its base.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from actors.ui.adoption import tab_label
from actors.ui.base import AppBase
from actors.ui.dialogs import AskScreen, ChoiceScreen, ConfirmScreen
from actors.ui.removal import loss_details, refusal_text, removal_question
from actors.ui.view import FOLDER_PREFIX, WorktreeItem
from orca.model import tab_groups
from orca.review import changed_files, file_diff, uncommitted
from orca.wire.errors import Conflict, OrcaError


class WorktreeActionsMixin(AppBase):
    """Rename, remove and review a worktree."""

    def action_rename_worktree(self) -> None:
        item = self.item(self.highlighted_worktree())
        if item is None:
            return

        def renamed(name: str | None) -> None:
            if name:
                self.guest.start_soon(self._rename, item.worktree_id, name)

        self.push_screen(AskScreen(f"Rename worktree {item.name} to:", item.name), renamed)

    async def _rename(self, worktree_id: str, name: str) -> None:
        # Whether it was shown, asked now: gitwatch's events may reach a refresh before
        # the reply does, and the refresh moves the selection off an id that is gone.
        shown, picks = self.selected_worktree == worktree_id, self._picks
        try:
            renamed = await self.backend.rename_worktree(worktree_id, name)
        except OrcaError as exc:
            self.report(exc.message)
            return
        if shown and self._picks == picks:  # the user picked no other one meanwhile
            # The same worktree under its new id: keep showing it (and its terminals).
            self.selected_worktree = self._renamed_to = renamed.new_worktree_id
            self._move_cursor(renamed.new_worktree_id)
            self.poke(view=True)

    async def ask(self, screen: ChoiceScreen[Any]) -> Any:
        """Show ``screen`` and wait for its answer (from a trio task)."""
        import trio

        answered, answer = trio.Event(), []

        def got(value: Any) -> None:
            answer.append(value)
            self.guest.run_sync_soon(answered.set)

        self.push_screen(screen, got)
        await answered.wait()
        return answer[0]

    def action_remove_worktree(self) -> None:
        item = self.item(self.highlighted_worktree())
        if item is not None:
            self.guest.start_soon(self._ask_removal, item)

    async def _ask_removal(self, item: WorktreeItem) -> None:
        """The CLI's rules, asked (``actors/ui/removal.py``)."""
        live = [
            s
            for s in (self.backend.sessions or {}).values()
            if s.worktree_id == item.worktree_id and s.running
        ]
        commands = [tab_label(list(s.argv)) for s in live]
        if item.worktree_id.startswith(FOLDER_PREFIX):
            question = removal_question(
                item.name, "the folder workspace (the folder stays)", commands
            )
            if await self.ask(ConfirmScreen(question)):
                await self._remove(item, live, force=False)
            return
        lost = await uncommitted(self.worktree_cwd(item.worktree_id))
        if lost:
            await self._offer_force(item, live, refusal_text(item.name, len(lost), commands), lost)
        elif await self.ask(ConfirmScreen(removal_question(item.name, "the worktree", commands))):
            await self._remove(item, live, force=False)

    async def _offer_force(
        self, item: WorktreeItem, live: list[Any], why: str, lost: list[str]
    ) -> None:
        """A refused removal: kept unless ``f`` and then yes (the only forced path)."""
        choices: list[tuple[str, str, bool]] = [
            ("n", "keep it", False),
            ("f", "remove it anyway...", True),
        ]
        details = loss_details(lost)
        if not await self.ask(
            ChoiceScreen(why, choices, default=False, cancel=False, details=details)
        ):
            return
        sure = ConfirmScreen(
            f"Delete {item.name} and the changes listed for good? This cannot be undone.",
            details=details,
        )
        if await self.ask(sure):
            await self._remove(item, live, force=True)

    async def _remove(self, item: WorktreeItem, live: list[Any], force: bool) -> None:
        worktree_id = item.worktree_id
        try:
            # Its terminals end first (their panes retired), those no layout shows too.
            session = self.backend.session()
            for wt, pane_key in list(tab_groups.all_pane_keys(session)):
                if wt == worktree_id:
                    await self.backend.retire_pane(pane_key)
            for row in live:
                await self.backend.close_session(row.session_id)
            if worktree_id.startswith(FOLDER_PREFIX):
                # A folder workspace is the store's record, not a git worktree (its
                # terminals left are reaped by ptyd's GC once the record is gone).
                from orca.contracts import store

                folder_id = worktree_id.removeprefix(FOLDER_PREFIX)
                await self.backend.invoke(
                    "store", store.FOLDER_WORKSPACE_REMOVE, store.IdArgs(id=folder_id)
                )
                return
            await self.backend.remove_worktree(worktree_id, force=force)
        except Conflict as exc:
            if force:
                self.report(exc.message)
                return
            # gitwatch found what the UI did not (changes made since, a lock): its
            # refusal, with the same explicit way to force it.
            lost = await uncommitted(self.worktree_cwd(worktree_id)) or []
            await self._offer_force(item, [], f"{item.name} is not removed: {exc.message}", lost)
        except OrcaError as exc:
            self.report(exc.message)

    def action_toggle_review(self) -> None:
        """The review of the highlighted row (as ``r`` and ``w`` act on it), else of the
        one open; closed when it already shows that one."""
        target = self.highlighted_worktree()
        self.review_shown = not self.review_shown or self._review_for != target
        self.arrange()
        if self.review_shown:
            self._load_review()

    def review_base(self, worktree_id: str) -> str:
        item = self.item(worktree_id)
        repo = self.backend.store.repos.get(item.repo_id) if item else None
        if repo is not None and repo.worktree_base_ref:
            return repo.worktree_base_ref
        main = next(
            (
                f
                for f in self.backend.git.values()
                if item and f.repo_id == item.repo_id and f.is_main
            ),
            None,
        )
        return main.branch if main is not None and main.branch else "HEAD"

    def _load_review(self) -> None:
        worktree_id = self.highlighted_worktree()
        if worktree_id is None:
            return
        self._review_for = worktree_id
        self.guest.start_soon(self._review, worktree_id)

    async def _review(self, worktree_id: str) -> None:
        cwd, base = self.worktree_cwd(worktree_id), self.review_base(worktree_id)
        point, files, error = await changed_files(cwd, base)
        if worktree_id != self._review_for:
            return  # the cursor moved on meanwhile: that row's review is on its way
        self._review_point, self.review_files = point, files
        item = self.item(worktree_id)
        title = f"{item.name if item else worktree_id} vs {base}: {len(files)} changed"
        self.query_one("#review-title", Static).update(error or title)
        listing = self.query_one("#review-files", OptionList)
        listing.clear_options()
        listing.add_options([Option(f"{f.status} {f.path}", id=f.path) for f in files])
        if files:
            await self._show_diff(files[0].path)
        else:
            self.review_diff = ""
            self.query_one("#review-diff", Static).update("")
        self.poke()

    async def _show_diff(self, path: str) -> None:
        from rich.syntax import Syntax

        worktree_id = self._review_for
        if worktree_id is None or self._review_point is None:
            return
        diff = await file_diff(self.worktree_cwd(worktree_id), self._review_point, path)
        if worktree_id != self._review_for:
            return
        self.review_diff = diff
        # Wrapped: a line longer than the pane is shown whole, not cut at its edge.
        self.query_one("#review-diff", Static).update(
            Syntax(self.review_diff, "diff", theme="monokai", word_wrap=True)
        )
        self.poke()
