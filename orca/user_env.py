"""The environment an agent gets: the user's, never Orca's (issue 40).

Orca runs from a virtualenv of its own (the README's ``.venv``), usually started from a
shell where that venv is active. Everything Orca starts inherits that shell, so without
care an agent's ``python3``/``pip`` would be Orca's interpreter and an agent's ``pip
install`` would land in Orca's venv. And a terminal started from a shell must see that
shell's environment (its ``PATH``, its ``SSH_AUTH_SOCK``, the venv of the user's own
project), not what the service's environment was at ``orca up``, as tmux's
``new-session`` does.

So every environment an agent is started with goes through :func:`user_environment`:

* Orca's own virtualenv is taken off: ``VIRTUAL_ENV`` and ``VIRTUAL_ENV_PROMPT`` when
  they name the venv Orca runs from, that venv's ``bin/`` off ``PATH``, the
  activation's prompt prefix off ``PS1``. A venv of the user's own stays as it is.
* Orca's internal variables are dropped: every ``ORCA_*`` but
  :data:`INHERITED_ORCA_VARS`, and ``PYTHONUNBUFFERED`` when the supervisor set it for
  its actors (``ORCA_PYTHONUNBUFFERED_SET``).

Pure but for ``os.path.realpath`` of the paths compared and :func:`which`'s look at
the file system.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

# Set by the supervisor beside the PYTHONUNBUFFERED it gives its actors
# (``orca.actor.app``): that one is Orca's, not the user's.
UNBUFFERED_SET_ENV = "ORCA_PYTHONUNBUFFERED_SET"

# The ORCA_* variables a child keeps (issue 23), each for a reason of the child's. Every
# other one is for Orca's processes, not for agents: the supervisor's to its actors
# (ORCA_SUPERVISOR, ORCA_SUPERVISOR_PID, ORCA_HEARTBEAT_S, ORCA_ACTOR_NAME,
# ORCA_PTYD_FD_KEEPER, ORCA_TCP_HOST) and the actors' settings (ORCA_PTYD_*,
# ORCA_GATEWAY_*, ORCA_REMOTE_*, ORCA_LOG_LEVEL...): an agent has no use for them, and an
# ``orca up`` run in the terminal must not start its tree with ours.
INHERITED_ORCA_VARS = frozenset(
    {
        # `orca` run in the terminal (by the user or the agent) reaches this profile.
        "ORCA_HOME",
        # The CLI there names the same execution host (the user's own setting).
        "ORCA_HOST_ID",
        # `orca watch --notify` there runs the user's own notifier.
        "ORCA_NOTIFY_COMMAND",
        # The hook script run by the agent there traces its calls (orca.hook_script).
        "ORCA_HOOK_TRACE",
    }
)

# Bounds of an environment a client sends with a spawn (checked where it is decoded):
# far above a real shell's (a few KB, ~100 variables), far below what would hurt ptyd.
MAX_ENV_VARS = 4096
MAX_ENV_BYTES = 1 << 20


def orca_prefix() -> str:
    """The virtualenv (or installation prefix) this Orca runs from."""
    return sys.prefix


def _same_path(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def user_environment(environ: Mapping[str, str], prefix: str | None = None) -> dict[str, str]:
    """``environ`` without Orca's virtualenv and Orca's internal variables (module
    docstring). ``prefix`` is Orca's venv (default: this interpreter's)."""
    prefix = orca_prefix() if prefix is None else prefix
    env = {
        k: v for k, v in environ.items() if not k.startswith("ORCA_") or k in INHERITED_ORCA_VARS
    }
    if environ.get(UNBUFFERED_SET_ENV) == "1":
        env.pop("PYTHONUNBUFFERED", None)
    if prefix == sys.base_prefix:
        return env  # Orca runs from no virtualenv: nothing of its own to take off
    venv = env.get("VIRTUAL_ENV")
    if venv is not None and _same_path(venv, prefix):
        prompt = env.pop("VIRTUAL_ENV_PROMPT", None)
        del env["VIRTUAL_ENV"]
        ps1 = env.get("PS1")
        if ps1 is not None:
            env["PS1"] = _without_prompt(ps1, prompt, os.path.basename(venv))
    if "PATH" in env:
        orca_bin = os.path.join(prefix, "bin")
        kept = [d for d in env["PATH"].split(os.pathsep) if not d or not _same_path(d, orca_bin)]
        env["PATH"] = os.pathsep.join(kept)
    return env


def _without_prompt(ps1: str, prompt: str | None, venv_name: str) -> str:
    """PS1 without the ``(venv) `` that ``activate`` put in front of it."""
    for prefix in (prompt, f"({venv_name}) "):
        if prefix and ps1.startswith(prefix):
            return ps1[len(prefix) :]
    return ps1


def parse_assignments(words: list[str]) -> dict[str, str]:
    """``-e NAME=VALUE`` options as a dict; ValueError names the first malformed one."""
    out: dict[str, str] = {}
    for word in words:
        name, sep, value = word.partition("=")
        if not sep or not name or not _is_name(name):
            raise ValueError(f"-e takes NAME=VALUE, not {word!r}")
        out[name] = value
    return out


def _is_name(name: str) -> bool:
    return (name[0].isalpha() or name[0] == "_") and all(c.isalnum() or c == "_" for c in name)


def check_bounds(env: Mapping[str, str]) -> None:
    """ValueError if ``env`` is beyond what a spawn takes (the bounds above) or holds a
    name or value a process environment cannot (``=`` in a name, NUL anywhere)."""
    if len(env) > MAX_ENV_VARS:
        raise ValueError(f"env: {len(env)} variables (at most {MAX_ENV_VARS})")
    size = 0
    for name, value in env.items():
        if not name or "=" in name or "\0" in name or "\0" in value:
            raise ValueError(f"env: bad variable {name[:40]!r}")
        size += len(name) + len(value) + 2
    if size > MAX_ENV_BYTES:
        raise ValueError(f"env: {size} bytes (at most {MAX_ENV_BYTES})")


def which(name: str, path: str) -> str | None:
    """The first executable file ``name`` on ``path`` (a ``PATH`` value), as execvp would
    find it; ``name`` itself if it has a slash and is executable."""
    if "/" in name:
        return name if os.access(name, os.X_OK) and not os.path.isdir(name) else None
    for directory in path.split(os.pathsep):
        candidate = os.path.join(directory or ".", name)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None
