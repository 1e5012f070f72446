"""Run the git CLI for what pygit2 cannot do (move, lock, safe remove, branch delete).

Every call goes through :func:`run_git`: ``trio.run_process`` (never blocks the loop),
``LC_ALL=C`` so the messages we match are English, no terminal prompts, a deadline.
A non-zero exit becomes :class:`GitFailure` carrying git's stderr, unless the caller
asks for the result to judge the exit code itself (``check=False``).
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass

import trio

from actors.gitwatch.errors import GitFailure

# Worktree add on a large repo checks out every file; two minutes bounds a hung git
# (e.g. a credential helper waiting on a tty) without failing honest big checkouts.
GIT_TIMEOUT_S = 120.0


@dataclass(frozen=True, slots=True)
class GitResult:
    returncode: int
    stdout: str
    stderr: str


def git_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"})
    return env


async def run_git(
    cwd: str,
    *args: str,
    check: bool = True,
    timeout: float = GIT_TIMEOUT_S,
    extra_env: dict[str, str] | None = None,
) -> GitResult:
    """Run ``git <args>`` in ``cwd``; raise GitFailure on a non-zero exit when ``check``."""
    try:
        with trio.fail_after(timeout):
            done = await trio.run_process(
                ["git", *args],
                cwd=cwd,
                env={**git_env(), **(extra_env or {})},
                check=False,
                stdin=subprocess.DEVNULL,
                capture_stdout=True,
                capture_stderr=True,
            )
    except trio.TooSlowError as exc:
        raise GitFailure(f"git {' '.join(args[:2])} timed out after {timeout:.0f}s") from exc
    except OSError as exc:
        raise GitFailure(f"cannot run git in {cwd}: {exc}") from exc
    result = GitResult(
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )
    if check and result.returncode != 0:
        raise GitFailure(f"git {' '.join(args[:2])} failed: {result.stderr.strip()}")
    return result


_version: tuple[int, ...] | None = None


async def git_version() -> tuple[int, ...]:
    """The git on PATH's (major, minor), ``(2, 39)``; ``()`` when it cannot be told. Read
    once, from "/": the actor's own working directory may be gone."""
    global _version
    if _version is None:
        try:
            result = await run_git("/", "version", check=False)
        except GitFailure:
            return ()  # git cannot run at all: every git op says so itself
        found = re.match(r"git version (\d+)\.(\d+)", result.stdout)
        _version = (int(found[1]), int(found[2])) if found else ()
    return _version
