"""No import circle in ``orca/`` (issue 23: ``orca.cli.remote.readers`` imported private
table helpers of ``orca.cli.worktree``, which imports it back - six modules in a ring).

Every ``import`` statement counts, those inside functions too: the CLI imports lazily
for start-up, and a lazy circle is still two modules that cannot be understood, tested
or moved one without the other.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ORCA = Path(__file__).resolve().parents[2] / "orca"


def module_name(path: Path) -> str:
    parts = path.relative_to(ORCA.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the ``orca`` modules it imports anywhere in its text."""
    modules = {module_name(p): p for p in ORCA.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:  # `from orca.views import handles` names a module
                    full = f"{node.module}.{alias.name}"
                    found.add(full if full in modules else node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph[module]):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_the_graph_is_read() -> None:
    graph = import_graph()
    assert "orca.cli.tables" in graph["orca.cli.remote.readers"]
    assert "orca.cli.remote.readers" in graph["orca.cli.worktree"]  # lazily: still counted


def test_no_module_of_orca_imports_itself_back_through_others() -> None:
    assert circles(import_graph()) == []


def test_the_remote_reader_loads_no_command_module() -> None:
    """In a fresh interpreter: the reader and its table cells, not `worktree ls`'s code."""
    code = (
        "import sys, orca.cli.remote.readers\n"
        "print(sorted(m for m in sys.modules if m.startswith('orca.cli.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert "orca.cli.worktree'" not in out and "orca.cli.worktree_ps" not in out, out


# -- the floors (issue 35; docs/architecture.md "The floors of orca/") ------------------
REPO = ORCA.parent
ACTORS = REPO / "actors"

# Each floor of orca/ imports only floors below it (and its own package).
FLOORS = {
    "orca.cli": 6,
    "orca.remote": 5,
    "orca.actor": 4,
    "orca.client": 4,
    "orca.views": 3,
    "orca.web_devices": 3,
    "orca.integrations": 3,
    "orca.keys": 3,
    "orca.contracts": 2,
    "orca.paths": 2,
    "orca.host": 2,
    "orca.hook_script": 2,
    "orca.sqlite_schema": 2,
    "orca.model": 1,  # with orca.model.tab_groups (the UI's tab-group rules, issue 35)
    "orca.wire": 1,
    "orca.fsio": 1,
    "orca.user_env": 1,
    "orca.web_config": 1,
    "orca.review": 1,
    "orca.logs": 1,
    "orca.pipes": 1,
    "orca.daemon": 1,
    "orca": 0,
}
# What stands against the floors, to be moved down, never added to (empty since issue
# 35's moves): a fixed one must leave these lists too, so they only shrink.
KNOWN_UPWARD: set[tuple[str, str]] = set()
# An actor's use of the command line's code (handles, the `ps` projection) ...
KNOWN_ACTORS_ON_CLI: set[str] = set()
# ... and a server's of the client library for its own contract or rules (ptyd's socket
# constants and VT rules were there). orca ui is a client: it may use orca/client.
KNOWN_SERVERS_ON_CLIENT: set[str] = set()
# An actor that talks to another one as its client uses that one's client module: the
# web's browser terminal attaches to ptyd; orcad, ptyd and a new keeper ask, start or
# take over the keeper.
CLIENTS_OF_ANOTHER_ACTOR = {
    ("actors/web/terminal.py", "orca.client.terminal"),
    ("actors/keeper/__main__.py", "orca.client.keeper"),
    ("actors/ptyd/handoff.py", "orca.client.keeper"),
    ("actors/supervisor/keeper.py", "orca.client.keeper"),
    ("actors/supervisor/tree.py", "orca.client.keeper"),
}


def floor_of(module: str) -> str | None:
    """The floor group ``module`` belongs to (``orca.cli``, ``orca.paths``, ...)."""
    parts = module.split(".")
    for n in (2, 1):
        group = ".".join(parts[:n])
        if group in FLOORS:
            return group
    return None


def imported(path: Path) -> set[str]:
    """Every absolute module name ``path`` imports, anywhere in its text."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_every_module_of_orca_has_a_floor() -> None:
    unplaced = sorted(m for m in map(module_name, ORCA.rglob("*.py")) if floor_of(m) is None)
    assert unplaced == [], "give each a floor in FLOORS (and docs/architecture.md)"


def test_each_floor_of_orca_imports_only_floors_below_it() -> None:
    upward = set()
    for path in ORCA.rglob("*.py"):
        own = floor_of(module_name(path))
        assert own is not None
        for name in imported(path):
            target = floor_of(name) if name.split(".")[0] == "orca" else None
            if target is not None and target != own and FLOORS[target] >= FLOORS[own]:
                upward.add((str(path.relative_to(REPO)), target))
    assert upward == KNOWN_UPWARD


def imports_under(root: Path) -> Iterator[tuple[str, str]]:
    """(file relative to the repo, module it imports) for every import under ``root``."""
    for path in root.rglob("*.py"):
        for name in imported(path):
            yield str(path.relative_to(REPO)), name


def test_orca_imports_nothing_of_the_actors() -> None:
    found = sorted(
        f"{rel}: {name}" for rel, name in imports_under(ORCA) if name.split(".")[0] == "actors"
    )
    assert found == []  # (it names them as module strings, to start them)


def test_no_actor_imports_another() -> None:
    found = sorted(
        f"{rel}: {name}"
        for rel, name in imports_under(ACTORS)
        if name.split(".")[0] == "actors" and name.split(".")[1:2] not in ([], [rel.split("/")[1]])
    )
    assert found == []


def test_actors_use_no_command_line_code_and_servers_no_client_library() -> None:
    on_cli, on_client = set(), set()
    for rel, name in imports_under(ACTORS):
        if floor_of(name) == "orca.cli":
            on_cli.add(rel)
        elif (
            floor_of(name) == "orca.client"
            and not rel.startswith("actors/ui/")
            and (rel, name) not in CLIENTS_OF_ANOTHER_ACTOR
        ):
            on_client.add(rel)
    assert on_cli == KNOWN_ACTORS_ON_CLI
    assert on_client == KNOWN_SERVERS_ON_CLIENT
