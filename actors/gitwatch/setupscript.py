"""The ``setup:`` script of a repo's ``orca.yaml``: parse it (pure), run it (trio).

Only one key is read, in the two shapes people write::

    setup: npm ci && npm run build          # a plain scalar (quotes optional)

    setup: |                                # a literal block: the indented lines
      uv sync
      cp .env.example .env

Anything else in the file is ignored; a file whose ``setup`` is some other YAML
construct (a list, a folded block) is reported as :class:`UnsupportedSetup` rather than
guessed at. A full YAML parser would be a new dependency for one key.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import textwrap
from collections.abc import Callable

import trio

from actors.gitwatch.errors import CallerError

SETUP_FILE_NAMES = ("orca.yaml", "orca.yml")


class UnsupportedSetup(CallerError):
    """``setup:`` is present but not a plain scalar or a ``|`` block."""


def parse_setup_script(text: str) -> str | None:
    """The setup script in ``text`` (an orca.yaml), or None when there is none."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if not line.startswith("setup:"):
            continue  # only a top-level key counts (no indentation)
        value = _strip_comment(line[len("setup:") :]).strip()
        if value in ("|", "|-", "|+"):
            return _block(lines[index + 1 :]) or None
        if value.startswith(("[", "{", ">", "-", "&", "*", "!")) or (
            not value and _block(lines[index + 1 :])
        ):
            # A flow or block collection, a folded scalar, an anchor: not guessed at.
            shown = value or lines[index + 1].strip()
            raise UnsupportedSetup(f"orca.yaml setup must be a string or a '|' block: {shown!r}")
        return _unquote(value) or None
    return None


def _block(rest: list[str]) -> str:
    body: list[str] = []
    for line in rest:
        if line.strip() and not line[:1].isspace():
            break  # the next top-level key ends the block
        body.append(line)
    return textwrap.dedent("\n".join(body)).strip("\n")


def _strip_comment(value: str) -> str:
    # A comment starts at " #" outside quotes; setup scripts rarely quote a '#'.
    quote = ""
    for i, ch in enumerate(value):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or value[i - 1].isspace()):
            return value[:i]
    return value


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        inner = value[1:-1]
        return inner.replace("''", "'") if value[0] == "'" else inner.replace('\\"', '"')
    return value


# A setup script installs dependencies; half an hour bounds a hung one.
SETUP_TIMEOUT_S = 1800.0
_CHUNK = 4096


def read_setup_script(worktree_path: str) -> str | None:
    """The setup script of the worktree's orca.yaml (None when there is no file or key)."""
    for name in SETUP_FILE_NAMES:
        try:
            with open(os.path.join(worktree_path, name), encoding="utf-8") as f:
                return parse_setup_script(f.read())
        except FileNotFoundError:
            continue
    return None


async def run_setup_script(
    worktree_path: str,
    repo_path: str,
    on_line: Callable[[str], None],
    timeout: float = SETUP_TIMEOUT_S,
    worktree_id: str | None = None,
) -> int | None:
    """Run the setup script in the new worktree, streaming each output line to ``on_line``.

    Returns its exit code, or None when the repo has no setup script. The script runs
    in its own process group, killed as a whole on timeout or cancellation. It sees
    ``ORCA_WORKTREE_PATH``, ``ORCA_ROOT_PATH`` (the main checkout) and ``ORCA_WORKTREE_ID``.
    """
    script = await trio.to_thread.run_sync(read_setup_script, worktree_path)
    if script is None:
        return None
    env = dict(os.environ, ORCA_WORKTREE_PATH=worktree_path, ORCA_ROOT_PATH=repo_path)
    if worktree_id:
        env["ORCA_WORKTREE_ID"] = worktree_id
    proc = await trio.lowlevel.open_process(
        ["/bin/sh", "-c", script],
        cwd=worktree_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert proc.stdout is not None
    try:
        with trio.move_on_after(timeout) as scope:
            pending = b""
            while chunk := await proc.stdout.receive_some(_CHUNK):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    on_line(line.decode("utf-8", "replace"))
            if pending:
                on_line(pending.decode("utf-8", "replace"))
            return await proc.wait()
        on_line(f"setup script timed out after {timeout:.0f}s")
        assert scope.cancelled_caught
        return -signal.SIGKILL
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with trio.CancelScope(shield=True):
                await proc.wait()
        await proc.stdout.aclose()
