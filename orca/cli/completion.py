"""``orca completion bash|zsh|fish``: a shell script completing commands, options,
terminal handles, worktree names, repos and actors.

The scripts are thin: on every Tab they run the hidden ``orca __complete -- WORD...``
(the words after ``orca``, the last one the word being completed) and offer what it
prints, one candidate a line. The logic lives here, once, for the three shells:
walk the argparse tree of the topic typed (``parser.build_parser(topic)`` imports only
that topic's module), then offer subcommands, options, an argument's ``choices``, or
the live names from the service (:data:`DYNAMIC`). A service that is down, slow or
refusing yields no names and no message: completion must never print an error into a
half-typed command line, so every OrcaError is swallowed here and only here.

bash splits words at ``:`` (``COMP_WORDBREAKS``), so ``fix-login:3f`` is completed as
``3f``; ``--bash`` strips what bash already has before the last ``:`` from each
candidate (bash-completion's ``__ltrim_colon_completions``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from orca.cli.output import EXIT_OK, EXIT_USAGE, fail
from orca.wire.errors import OrcaError

# A service that does not answer within this is skipped: Tab must feel instant.
COMPLETE_TIMEOUT_S = 0.5

SHELLS = ("bash", "zsh", "fish")

BASH = r"""# orca completion for bash: eval "$(orca completion bash)" (e.g. in ~/.bashrc)
_orca_complete() {
    local cur="${COMP_LINE:0:COMP_POINT}"
    local -a words
    IFS=' ' read -r -a words <<< "${cur}"
    [[ "${cur}" == *" " ]] && words+=("")
    local IFS=$'\n'
    COMPREPLY=($(orca __complete --bash -- "${words[@]:1}" 2>/dev/null))
}
complete -o default -F _orca_complete orca
"""

ZSH = r"""#compdef orca
# orca completion for zsh: eval "$(orca completion zsh)" (after compinit)
_orca() {
    local -a candidates
    candidates=(${(f)"$(orca __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null)"})
    if (( ${#candidates} )); then
        compadd -Q -S ' ' -- "${candidates[@]}"
    else
        _files
    fi
}
compdef _orca orca
"""

FISH = r"""# orca completion for fish: orca completion fish | source
function __orca_complete
    set -l words (commandline -opc) (commandline -ct)
    orca __complete -- $words[2..-1] 2>/dev/null
end
complete -c orca -f -a '(__orca_complete)'
"""

SCRIPTS = {"bash": BASH, "zsh": ZSH, "fish": FISH}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "completion",
        help='print a shell completion script (eval "$(orca completion bash)")',
    )
    parser.add_argument("shell", choices=SHELLS)
    parser.set_defaults(func=cmd_completion)


def cmd_completion(args: argparse.Namespace) -> int:
    sys.stdout.write(SCRIPTS[args.shell])
    return EXIT_OK


# -- live names ---------------------------------------------------------------------


def _terminals() -> list[str]:
    """Every terminal's handle, as ``orca term ls --all`` shows it (read, attach and
    close take ended terminals too)."""
    from orca.cli.lookup import list_terminals

    return sorted(list_terminals(timeout=COMPLETE_TIMEOUT_S).handles.values())


def _running_terminals() -> list[str]:
    """The running terminals' handles (what ``term send`` and ``term kill`` act on)."""
    from orca.cli.lookup import list_terminals

    found = list_terminals(timeout=COMPLETE_TIMEOUT_S)
    return sorted(found.handles[s.session_id] for s in found.sessions if s.running)


def _agents() -> list[str]:
    """What ``orca ack`` takes: every terminal's handle and every worktree's."""
    from orca.cli.lookup import list_terminals

    found = list_terminals(timeout=COMPLETE_TIMEOUT_S)
    return sorted({*found.handles.values(), *found.worktrees.values()})


def _worktrees() -> list[str]:
    from orca.client.sync import invoke
    from orca.contracts import gitwatch
    from orca.views.handles import worktree_handles

    listing = invoke(gitwatch.WORKTREE_LIST, gitwatch.ListArgs(), timeout=COMPLETE_TIMEOUT_S)
    return sorted(worktree_handles((r.id, r.path) for r in listing.worktrees).values())


def _repos() -> list[str]:
    from orca.client.sync import invoke
    from orca.contracts import store
    from orca.views.handles import repo_handles

    repos = invoke(store.REPO_LIST, timeout=COMPLETE_TIMEOUT_S).repos
    return sorted(repo_handles((r.id, r.display_name) for r in repos).values())


def _folders() -> list[str]:
    """Folder workspaces' handles (``orca folder ls``'s first column)."""
    from orca.cli.folder import folder_handles
    from orca.client.sync import invoke
    from orca.contracts import store

    folders = invoke(store.FOLDER_WORKSPACE_LIST, timeout=COMPLETE_TIMEOUT_S).folder_workspaces
    return sorted(folder_handles(folders, COMPLETE_TIMEOUT_S).values())


def _actors() -> list[str]:
    from orca.cli.service import known_actors
    from orca.paths import resolve_paths

    return known_actors(resolve_paths())


def _restartable() -> list[str]:
    """The actors orcad supervises: what ``orca restart`` takes (not orcad, not the
    keeper, whose logs ``orca logs`` shows)."""
    from orca.client.sync import invoke
    from orca.contracts import supervisor as sup

    return [a.name for a in invoke(sup.STATUS, timeout=COMPLETE_TIMEOUT_S).actors]


def _hosts() -> list[str]:
    """The remote hosts this machine follows (its own file: no service needed)."""
    from orca.paths import resolve_paths
    from orca.remote.hosts import load_hosts

    return sorted(load_hosts(resolve_paths()))


def _web_devices() -> list[str]:
    """The web dashboard's paired devices (its device file: no service needed)."""
    from orca.paths import resolve_paths
    from orca.web_devices import DevicesFile, DevicesFileError

    try:
        return sorted(d.device_id for d in DevicesFile(resolve_paths().data_dir).load())
    except DevicesFileError:
        return []


def _runs() -> list[str]:
    """Every run's id and name (``orca run ls``)."""
    from orca.client.sync import invoke
    from orca.contracts import orch

    runs = invoke(orch.LIST, timeout=COMPLETE_TIMEOUT_S).runs
    return sorted({r.run for r in runs} | {r.name for r in runs})


def _variants() -> list[str]:
    """The variant names runs have (``claude-1``...): the same few in every run."""
    from orca.client.sync import invoke
    from orca.contracts import orch

    runs = invoke(orch.LIST, timeout=COMPLETE_TIMEOUT_S).runs[:20]
    names: set[str] = set()
    for r in runs:
        names.update(
            v.variant
            for v in invoke(orch.SHOW, orch.RunArgs(run=r.run), timeout=COMPLETE_TIMEOUT_S).variants
        )
    return sorted(names)


def _automations() -> list[str]:
    """Every automation's name (``orca auto ls``)."""
    from orca.client.sync import invoke
    from orca.contracts import orch

    listed = invoke(orch.AUTO_LIST, timeout=COMPLETE_TIMEOUT_S).automations
    return sorted(i.automation.name for i in listed)


def _recipients() -> list[str]:
    return ["all", *_variants()]


# Which live names an argument takes: (topic, subcommand or "", argument dest).
DYNAMIC: dict[tuple[str, str, str], Callable[[], list[str]]] = {
    **{("term", cmd, "id"): _terminals for cmd in ("attach", "read", "close", "resume", "fork")},
    **{("term", cmd, "id"): _running_terminals for cmd in ("send", "kill")},
    ("ack", "", "target"): _agents,
    ("approve", "", "target"): _agents,
    ("deny", "", "target"): _agents,
    ("term", "new", "worktree"): _worktrees,
    ("worktree", "rm", "worktree"): _worktrees,
    ("worktree", "mv", "worktree"): _worktrees,
    ("worktree", "merge", "worktree"): _worktrees,
    ("worktree", "create", "repo"): _repos,
    ("worktree", "ls", "repo"): _repos,
    ("repo", "rm", "id"): _repos,
    ("folder", "rm", "folder"): _folders,
    ("restart", "", "actor"): _restartable,
    ("logs", "", "actor"): _actors,
    ("host", "rm", "name"): _hosts,
    ("host", "status", "name"): _hosts,
    ("web", "devices", "device"): _web_devices,
    ("run", "new", "repo"): _repos,
    **{("run", cmd, "run"): _runs for cmd in ("show", "check", "merge", "rm", "send", "inbox")},
    **{("run", cmd, "variant"): _variants for cmd in ("check", "merge", "inbox")},
    ("run", "send", "to"): _recipients,
    ("auto", "add", "repo"): _repos,
    **{
        ("auto", cmd, "automation"): _automations
        for cmd in ("show", "rm", "pause", "resume", "run-now")
    },
}
# The arguments that take no name Orca knows (a path, a new name, text, a command).
FREE_TEXT = {
    ("repo", "add", "path"),
    ("settings", "set", "value"),
    ("folder", "add", "path"),
    ("worktree", "create", "name"),
    ("worktree", "mv", "new_name"),
    ("term", "new", "cmd"),
    ("term", "send", "text"),
    ("host", "authorize", "key"),
    ("host", "revoke", "key"),
    ("host", "add", "name"),
    ("host", "add", "endpoint"),
    ("host", "ssh-accept", "key"),
    ("vault", "search", "query"),
    ("run", "new", "prompt"),
    ("run", "send", "message"),
    ("run", "report", "summary"),
    ("auto", "add", "name"),
    ("auto", "add", "prompt"),
}


# -- the walk -----------------------------------------------------------------------


def _subparsers(
    parser: argparse.ArgumentParser,
) -> argparse._SubParsersAction[argparse.ArgumentParser] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0


def candidates(words: list[str]) -> list[str]:
    """What may replace the last of ``words`` (the words after ``orca``)."""
    from orca.cli.parser import TOPICS, build_parser

    *done, current = words or [""]
    topic = done[0] if done else None
    if topic is not None and topic not in TOPICS:
        return []
    parser = build_parser(topic)
    path: list[str] = []
    positional = 0
    pending: argparse.Action | None = None  # an option waiting for its value
    for word in done:
        if pending is not None:
            pending = None
            continue
        if word == "--":
            return []  # a command line of its own (term new -- CMD): not ours
        if word.startswith("-"):
            action = parser._option_string_actions.get(word.split("=", 1)[0])
            if action is not None and _takes_value(action) and "=" not in word:
                pending = action
            continue
        sub = _subparsers(parser)
        if sub is not None and positional == 0 and word in sub.choices:
            parser = sub.choices[word]
            path.append(word)
            continue
        positional += 1
    found = _offer(parser, path, positional, pending, current)
    return sorted(c for c in dict.fromkeys(found) if c.startswith(current))


def _offer(
    parser: argparse.ArgumentParser,
    path: list[str],
    positional: int,
    pending: argparse.Action | None,
    current: str,
) -> list[str]:
    if pending is not None:
        return _values(pending, path)
    if current.startswith("-"):
        return [s for a in parser._actions for s in a.option_strings]
    sub = _subparsers(parser)
    if sub is not None and positional == 0:
        return list(sub.choices)
    args = [a for a in parser._actions if not a.option_strings and a is not sub]
    return _values(args[positional], path) if positional < len(args) else []


def _values(action: argparse.Action, path: list[str]) -> list[str]:
    if action.choices is not None:
        return [str(c) for c in action.choices]
    topic, command = [*path, "", ""][:2]
    names = DYNAMIC.get((topic, command, action.dest))
    if names is None:
        return []
    try:
        return names()
    except OrcaError:
        return []  # the service is down or slow: offer nothing, say nothing


def run_complete(argv: list[str]) -> int:
    """``orca __complete [--bash] -- WORD...``: print the candidates, one a line."""
    bash = argv[:1] == ["--bash"]
    if bash:
        argv = argv[1:]
    if argv[:1] != ["--"]:
        return fail("usage: orca __complete [--bash] -- WORD...", EXIT_USAGE)
    words = argv[1:]
    found = candidates(words)
    current = words[-1] if words else ""
    if bash and ":" in current:
        cut = current.rindex(":") + 1
        found = [c[cut:] for c in found]
    if found:
        sys.stdout.write("\n".join(found) + "\n")
    return EXIT_OK
