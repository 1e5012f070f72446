"""Modal dialogs: launch an agent, a question answered with a key, a line of text."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Select

T = TypeVar("T")

# Agent presets: how each CLI takes a first prompt (its own docs):
#   Claude Code: `claude "query"` starts an interactive session with it
#     (https://docs.anthropic.com/en/docs/claude-code/cli-reference)
#   Codex CLI: `codex "prompt"` (https://github.com/openai/codex#quickstart)
#   Gemini CLI: `gemini -i "prompt"` runs it and stays interactive
#     (https://github.com/google-gemini/gemini-cli, docs/cli/commands)
PRESETS: dict[str, tuple[str, ...]] = {
    "claude": ("claude",),
    "codex": ("codex",),
    "gemini": ("gemini",),
    "shell": (),
    "custom": (),
}
PRESET_LABELS = {
    "claude": "Claude Code",
    "codex": "Codex",
    "gemini": "Gemini CLI",
    "shell": "shell",
    "custom": "custom command",
}


@dataclass(frozen=True)
class LaunchRequest:
    """What the launch dialog asked for (validated)."""

    worktree_name: str  # "" = the selected worktree
    base: str
    preset: str
    command: tuple[str, ...]  # custom preset only
    prompt: str

    def argv(self, shell: str) -> tuple[list[str], str]:
        """The argv to spawn and the text to type after (a prompt for shell/custom)."""
        if self.preset == "shell":
            return [shell], (self.prompt + "\r") if self.prompt else ""
        if self.preset == "custom":
            return list(self.command), (self.prompt + "\r") if self.prompt else ""
        base = list(PRESETS[self.preset])
        if not self.prompt:
            return base, ""
        if self.preset == "gemini":
            return [*base, "-i", self.prompt], ""
        return [*base, self.prompt], ""

    @property
    def label(self) -> str:
        if self.preset == "custom" and self.command:
            return self.command[0].rsplit("/", 1)[-1]
        return self.preset


class LaunchScreen(ModalScreen[LaunchRequest | None]):
    """New worktree (optional) + an agent in it."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "cancel")]
    DEFAULT_CSS = """
    LaunchScreen { align: center middle; }
    LaunchScreen > Vertical { width: 70; height: auto; border: round $accent; padding: 1 2; background: $surface; }
    #launch-error { color: $error; }
    """

    def __init__(self, worktree_label: str) -> None:
        super().__init__()
        self.worktree_label = worktree_label

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Launch an agent (blank name: in {self.worktree_label})", markup=False)
            yield Input(placeholder="new worktree name (optional)", id="launch-name")
            yield Input(placeholder="base branch (optional)", id="launch-base")
            yield Select(
                [(PRESET_LABELS[k], k) for k in PRESETS],
                value="shell",
                allow_blank=False,
                id="launch-preset",
            )
            yield Input(placeholder="custom command (custom preset)", id="launch-command")
            yield Input(placeholder="first prompt (optional)", id="launch-prompt")
            yield Label("", id="launch-error", markup=False)

    def on_mount(self) -> None:
        self.query_one("#launch-name", Input).focus()

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.submit()

    def submit(self) -> None:
        name = self.query_one("#launch-name", Input).value.strip()
        base = self.query_one("#launch-base", Input).value.strip()
        preset = str(self.query_one("#launch-preset", Select).value)
        command_text = self.query_one("#launch-command", Input).value
        prompt = self.query_one("#launch-prompt", Input).value.strip()
        error = self.query_one("#launch-error", Label)
        try:
            command = tuple(shlex.split(command_text))
        except ValueError as exc:
            error.update(f"custom command: {exc}")
            return
        if preset == "custom" and not command:
            error.update("the custom preset needs a command")
            return
        if any(ch in name for ch in "\x00\n\r"):
            error.update("the name cannot contain control characters")
            return
        self.dismiss(LaunchRequest(name, base, preset, command, prompt))


class ChoiceScreen(ModalScreen[T]):
    """A question answered with one key (``choices``: key, what it does, the answer);
    Enter gives ``default``, Escape ``cancel``. Every text is shown as written: a
    worktree's name or a path is never read as markup (``[y]`` is no style tag)."""

    DEFAULT_CSS = """
    ChoiceScreen { align: center middle; }
    ChoiceScreen > Vertical { width: 76; height: auto; border: round $warning; padding: 1 2; background: $surface; }
    ChoiceScreen .details { color: $text-muted; margin: 1 0; }
    """

    def __init__(
        self,
        question: str,
        choices: list[tuple[str, str, T]],
        *,
        default: T,
        cancel: T,
        details: str = "",
    ) -> None:
        super().__init__()
        self.question = question
        self.details = details
        self.choices = {key: answer for key, _what, answer in choices}
        enter = next((key for key, _what, answer in choices if answer == default), None)
        self.keys_line = "   ".join(
            f"[{key}] {what}" + (" (Enter)" if key == enter else "") for key, what, _a in choices
        )
        self.default, self.cancel = default, cancel

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question, markup=False)
            if self.details:
                yield Label(self.details, markup=False, classes="details")
            yield Label(self.keys_line + "   [Esc] cancel", markup=False, id="choice-keys")

    def on_key(self, event: events.Key) -> None:
        event.stop()
        event.prevent_default()
        if event.key in self.choices:
            self.dismiss(self.choices[event.key])
        elif event.key == "enter":
            self.dismiss(self.default)
        elif event.key == "escape":
            self.dismiss(self.cancel)


class ConfirmScreen(ChoiceScreen[bool]):
    """A yes/no question: y / n; Enter answers ``default`` (no, unless told)."""

    def __init__(self, question: str, *, default: bool = False, details: str = "") -> None:
        super().__init__(
            question,
            [("y", "yes", True), ("n", "no", False)],
            default=default,
            cancel=False,
            details=details,
        )


class AskScreen(ModalScreen[str | None]):
    """One line of text (Enter submits, Escape cancels)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "cancel")]
    DEFAULT_CSS = """
    AskScreen { align: center middle; }
    AskScreen > Vertical { width: 70; height: auto; border: round $accent; padding: 1 2; background: $surface; }
    """

    def __init__(self, question: str, value: str = "") -> None:
        super().__init__()
        self.question = question
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question, markup=False)
            yield Input(value=self.value, id="ask-input")

    def on_mount(self) -> None:
        self.query_one("#ask-input", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)
