"""``orca term``: terminals owned by ``ptyd`` - new, ls, attach, send, read, kill, close.

``attach`` puts the local terminal in raw mode, enters an outer alternate screen, shows
the session's screen (redrawn from ptyd's terminal model: no replayed queries), then
streams output over ptyd's attach stream (this terminal answers the program's queries
while it is the one that typed last) and forwards keystrokes and window-size changes (a size
different from the session's resizes it, so a full-screen program redraws). ``Ctrl-]`` detaches; the
session keeps running and a later ``attach`` shows the screen again. A gap in the
stream (a slow terminal, a ``ptyd`` restart) is caught up by offset; a gap beyond the
scrollback repaints from the model.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from orca.cli.output import EXIT_OK, EXIT_USAGE, fail, print_json, print_table
from orca.wire.errors import OrcaError

if TYPE_CHECKING:
    import argparse

    from orca.client.terminal import LocalTerminalStream
    from orca.contracts.ptyd import SessionRow
    from orca.views.resume import Plan

DETACH_KEY = b"\x1d"  # Ctrl-]: what telnet taught a generation to press to get out
# How long attach waits in one poll; bounds the delay of noticing a resize.
POLL_MS = 200
CLEAR_SCREEN = b"\x1b[H\x1b[2J"


def _new(args: argparse.Namespace) -> int:
    """Print the new terminal's handle (``--json``: it with ptyd's ids and pid)."""
    from orca.cli.remote.terminal import remote_new  # HOST:WORKTREE of a known host
    from orca.client.sync import invoke
    from orca.contracts import ptyd

    args.cmd = _options_after_worktree(args)
    remote = remote_new(args)
    if remote is not None:
        return remote
    from orca.cli.lookup import worktree_and_cwd
    from orca.user_env import parse_assignments, user_environment

    try:
        extra = parse_assignments(args.env or [])
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    argv = args.cmd or [os.environ.get("SHELL", "/bin/sh")]
    worktree_id, cwd = worktree_and_cwd(args.worktree)
    size = os.get_terminal_size() if sys.stdout.isatty() else os.terminal_size((80, 24))
    request = ptyd.SpawnArgs(
        argv=argv,
        cwd=args.cwd or cwd,
        worktree_id=worktree_id,
        cols=size.columns,
        rows=size.lines,
        env=extra or None,
        # This shell's environment, as tmux's new-session takes its client's (issue 40).
        user_env=user_environment(os.environ),
    )
    spawned = invoke(ptyd.SPAWN, request)
    handle = _handle_of(spawned.session_id)
    if args.json:
        from orca.model.codec import to_builtins

        print_json("session", {"handle": handle, **to_builtins(spawned)})
    else:
        print(handle)
    return EXIT_OK


def _handle_of(session_id: str) -> str:
    """The handle `term ls` shows for a session just started (its id if ptyd stopped
    answering: the id still names it)."""
    from orca.cli.lookup import list_terminals

    try:
        return list_terminals().handles.get(session_id, session_id)
    except OrcaError:
        return session_id


def _plan_for(row: SessionRow, *, fork: bool = False) -> Plan:
    """How the agent of ``row``'s pane resumes (or forks), by the session hooks bound."""
    from orca.client.sync import invoke
    from orca.contracts import hooks
    from orca.views.resume import pane_plan

    return pane_plan(row, invoke(hooks.SESSION_BINDINGS).bindings, fork=fork)


def _resume(args: argparse.Namespace) -> int:
    """Start an ended agent pane again on its own conversation (issue 34): the same pane
    (tab and place in the layout), worktree and folder, the agent's resume command with
    the session id its hooks bound (``orca.views.resume``); ``--rerun``: its command
    again, a new conversation. The environment is this shell's, as ``term new``'s."""
    from orca.cli.lookup import find_terminal
    from orca.client.sync import invoke
    from orca.contracts import ptyd
    from orca.user_env import user_environment

    row = find_terminal(args.id)
    if row.running:
        return fail(f"{args.id} is still running: nothing to resume", EXIT_USAGE)
    resumed = None
    if args.rerun:
        argv = list(row.argv)
    else:
        plan = _plan_for(row)
        if plan.refusal:
            return fail(
                f"{plan.refusal}: `orca term resume {args.id} --rerun` runs "
                f"{' '.join(row.argv) or 'its command'} again, as a new conversation",
                EXIT_USAGE,
            )
        argv, resumed = list(plan.argv), plan.session_id
    size = os.get_terminal_size() if sys.stdout.isatty() else os.terminal_size((row.cols, row.rows))
    spawned = invoke(
        ptyd.SPAWN,
        ptyd.SpawnArgs(
            argv=argv,
            cwd=row.cwd,
            worktree_id=row.worktree_id,
            cols=size.columns,
            rows=size.lines,
            pane_key=row.pane_key,
            user_env=user_environment(os.environ),
        ),
    )
    handle = _handle_of(spawned.session_id)
    if args.json:
        from orca.model.codec import to_builtins

        print_json(
            "session",
            {
                "handle": handle,
                "argv": argv,
                "resumed": resumed,
                **to_builtins(spawned),
            },
        )
    else:
        print(handle)
    return EXIT_OK


def _fork(args: argparse.Namespace) -> int:
    """A new worktree branched from the agent's worktree with its uncommitted work, and
    a new pane there running a fork of the agent's conversation (issue 34; Claude Code
    ``--resume ID --fork-session``); the source worktree and pane are left as they are."""
    from orca.cli.lookup import find_terminal
    from orca.cli.worktree import CREATE_TIMEOUT_S
    from orca.client.sync import invoke
    from orca.contracts import gitwatch, ptyd
    from orca.model.ids import parse_worktree_id
    from orca.user_env import user_environment

    row = find_terminal(args.id)
    plan = _plan_for(row, fork=True)
    if plan.refusal:
        return fail(f"cannot fork {args.id}: {plan.refusal}", EXIT_USAGE)
    source = parse_worktree_id(row.worktree_id)
    name = args.name or f"{os.path.basename(source.path)}-fork-{os.urandom(2).hex()}"
    created = invoke(
        gitwatch.WORKTREE_CREATE,
        gitwatch.CreateArgs(
            repo_id=source.repo_id,
            name=name,
            setup="skip",
            source="fork",
            carry_from=source.path,
        ),
        timeout=CREATE_TIMEOUT_S,
    )
    # The same folder within the new worktree as the agent's within its own.
    inside = os.path.relpath(row.cwd, source.path) if row.cwd.startswith(source.path) else "."
    cwd = os.path.normpath(os.path.join(created.path, inside))
    size = os.get_terminal_size() if sys.stdout.isatty() else os.terminal_size((row.cols, row.rows))
    spawned = invoke(
        ptyd.SPAWN,
        ptyd.SpawnArgs(
            argv=list(plan.argv),
            cwd=cwd if os.path.isdir(cwd) else created.path,
            worktree_id=created.worktree_id,
            cols=size.columns,
            rows=size.lines,
            user_env=user_environment(os.environ),
        ),
    )
    handle = _handle_of(spawned.session_id)
    if args.json:
        from orca.model.codec import to_builtins

        print_json(
            "fork",
            {
                "handle": handle,
                "argv": list(plan.argv),
                "worktree": to_builtins(created),
                **to_builtins(spawned),
            },
        )
    else:
        print(f"{handle} (in {created.path})")
    return EXIT_OK


def _options_after_worktree(args: argparse.Namespace) -> list[str]:
    """The command of ``term new WORKTREE [OPTIONS --] CMD...``, the options taken out.

    argparse's REMAINDER keeps every word after WORKTREE, options of ``term new`` typed
    there included (``--json -- claude``), and drops a ``--`` only when it comes first.
    So words that start with ``-`` up to a ``--`` are ``term new``'s options (an unknown
    one is a usage error) and what follows is the command; otherwise every word is the
    command as typed, a ``--`` inside it included (``-- git log -- README``)."""
    words = list(args.cmd)
    if not words or not words[0].startswith("-") or "--" not in words:
        return words
    cut = words.index("--")
    args.new_options.parse_args(words[:cut], namespace=args)
    return words[cut + 1 :]


def _with_session(
    command: Callable[[argparse.Namespace], int],
) -> Callable[[argparse.Namespace], int]:
    """``command`` with ``args.id`` resolved from whatever names a terminal to its id."""

    def resolved(args: argparse.Namespace) -> int:
        from orca.cli.remote.terminal import run_remote_term  # HOST:HANDLE of a known host

        remote = run_remote_term(command.__name__, args)
        if remote is not None:
            return remote
        from orca.cli.lookup import resolve_session

        args.id = resolve_session(args.id)
        return command(args)

    resolved.__doc__ = command.__doc__
    return resolved


def _ls(args: argparse.Namespace) -> int:
    """The table shows running terminals (and how many ended ones it hides); ``--all``
    also the ended ones, those from before ptyd's start included (issue 13: history is
    kept across ``orca down``, crashes and reboots). ``--json`` lists what ptyd's table
    holds (running and ended since its start), ``--all`` adds the archived ones."""
    from orca.cli.lookup import list_terminals

    sessions, handles, _ = list_terminals()
    bindings = _binding_rows(sessions) if args.all else []
    from orca.remote import any_known_host

    if any_known_host():
        from orca.cli.remote.readers import sessions_with_remotes  # remote hosts' rows, labelled

        if sessions_with_remotes(args, sessions, handles):
            return EXIT_OK
    if args.json:
        from orca.model.codec import to_builtins

        shown = sessions if args.all else [s for s in sessions if not s.archived]
        print_json(
            "sessions",
            [{"handle": handles[s.session_id], **to_builtins(s)} for s in shown],
        )
        return EXIT_OK
    from orca.cli.output import human_bytes

    shown = sessions if args.all else [s for s in sessions if s.running]
    rows = [
        (
            handles[s.session_id],
            session_state(s),
            None if s.archived else s.pid,  # from before ptyd's start: the pid may be reused
            human_bytes(s.end_offset),
            " ".join(s.argv) or None,
        )
        for s in shown
    ]
    print_table(("TERMINAL", "STATE", "PID", "OUTPUT", "COMMAND"), rows)
    removed = [handles[s.session_id] for s in shown if s.folder_missing]
    if removed:
        print(
            f"warning: {', '.join(removed)}: the folder was removed while the terminal runs"
            " (the program keeps running; `orca term close` ends it)"
        )
    hidden = len(sessions) - len(shown)
    if hidden:
        print(f"({hidden} ended terminal{'s' if hidden != 1 else ''} hidden: `orca term ls --all`)")
    if bindings:
        print()
        print_table(("PANE", "BOUND TO", "BINDING"), bindings, title="saved pane bindings:")
    return EXIT_OK


def session_state(row: SessionRow) -> str:
    """``running``, ``exited N`` or ``lost (...)`` as ``term ls`` shows a session."""
    if row.running:
        return "running, its folder removed" if row.folder_missing else "running"
    if row.lost:
        return "lost (Orca and the terminal ended without seeing its exit)"
    return f"exited {row.exit_code}"


def _binding_rows(sessions: list[SessionRow]) -> list[tuple[str, str, str]]:
    """Saved pane bindings of the local session whose PTY is not running (store's
    verdicts, ``ptyBindingStates``); nothing when the store does not answer."""
    from orca.cli.pty_bindings import binding_rows

    return binding_rows({s.session_id for s in sessions if s.running})


def _send(args: argparse.Namespace) -> int:
    from orca.client.sync import invoke
    from orca.contracts import ptyd

    text = args.text + ("\r" if args.enter else "")
    invoke(ptyd.WRITE, ptyd.WriteArgs(session_id=args.id, text=text))
    return EXIT_OK


def _read(args: argparse.Namespace) -> int:
    from orca.client.sync import invoke
    from orca.contracts import ptyd

    reply = invoke(ptyd.READ, ptyd.ReadArgs(session_id=args.id, since=args.since))
    sys.stdout.buffer.write(reply.data)
    sys.stdout.buffer.flush()
    if not reply.running and sys.stderr.isatty():
        print(f"\r\n[exited {reply.exit_code}]", file=sys.stderr)
    return EXIT_OK


def _kill(args: argparse.Namespace) -> int:
    """Say what was ended (``killed fix-login:3f2a (pid 4242)``), by the handle ``term
    ls`` shows; with ``--signal``, what was sent where."""
    from orca.client.sync import invoke
    from orca.contracts import ptyd

    named, row = _listed(args.id)
    if args.signal:
        reply = invoke(ptyd.SIGNAL, ptyd.SignalArgs(session_id=args.id, signal=args.signal))
        print(f"sent {args.signal} to {named}" if reply.delivered else f"{named} had already ended")
        return EXIT_OK
    invoke(ptyd.KILL, ptyd.SessionArgs(session_id=args.id))
    print(
        f"{named} had already ended" if row is not None and not row.running else f"killed {named}"
    )
    return EXIT_OK


def _listed(session_id: str) -> tuple[str, SessionRow | None]:
    """``handle (pid N)`` as ``term ls`` shows the session, and its row; its id and None
    when ptyd's listing lacks it (the request to ptyd then says whether it exists)."""
    from orca.cli.lookup import list_terminals

    try:
        terminals = list_terminals()
    except OrcaError:
        return session_id, None
    for s in terminals.sessions:
        if s.session_id == session_id:
            return f"{terminals.handles[session_id]} (pid {s.pid})", s
    return session_id, None


def _close(args: argparse.Namespace) -> int:
    """A pane close: on success the pane is fenced in hooks (late status is rejected)."""
    from orca.cli.live_terminals import CLOSE_TIMEOUT_S
    from orca.client.sync import invoke
    from orca.contracts import ptyd

    reply = invoke(ptyd.CLOSE, ptyd.SessionArgs(session_id=args.id), timeout=CLOSE_TIMEOUT_S)
    if reply.history_only is True:  # issue 13: an ended terminal from before ptyd's start
        print("deleted the ended terminal's history", file=sys.stderr)
    elif not reply.fenced:
        print(
            "orca: session closed, but hooks did not confirm the pane's fence "
            "(is hooks running? see `orca status`)",
            file=sys.stderr,
        )
    return EXIT_OK


def _attach(args: argparse.Namespace) -> int:
    """Show the session's screen (redrawn from ptyd's model), then the live session.

    Whatever ends the attachment - Ctrl-], the session's exit, an error, SIGTERM or
    SIGHUP (``orca down``, a closed window), ptyd's death - puts the user's terminal
    back: out of the alternate screen, mouse/keypad/bracketed paste off, cursor shown,
    attributes reset (``RESTORE_USER_TERMINAL``), and the tty's own settings restored.

    Issue 24: the terminal is handed to ptyd (``orca.client.handed``), which reads the
    keys from it and writes the output to it, as tmux's server does with its client's;
    this process only forwards window-size changes and restores the terminal. If ptyd
    dies meanwhile the terminal is restored at once and the attach resumes when ptyd is
    back. A ptyd that does not take the terminal (an older one; a session that ended)
    gets the attach stream instead (issue 14, :func:`_attach_streamed`).
    """
    if show_ended_session(args.id) is not None:  # issue 13: its final screen, then return
        return EXIT_OK
    if not sys.stdin.isatty():
        return fail("attach needs a terminal on stdin", EXIT_USAGE)
    if sys.stdout.isatty():
        from orca.cli.term_handed import attach_handed

        reason = attach_handed(args.id, sys.stdin.fileno(), sys.stdout.fileno())
        if reason is not None:
            try:
                print(f"\r\n[{reason}]")
            except OSError:
                pass  # no terminal to say it on
            return EXIT_OK
    return _attach_streamed(args)


def _attach_streamed(args: argparse.Namespace) -> int:
    """The attach over ptyd's attach stream (issue 14): keys and output through here.

    Keys and output travel on ptyd's attach stream (one socket, no RPC per
    keystroke); the session is drawn in an outer alternate screen (as tmux does), so
    leaving it on detach shows what the terminal showed before the attach. ptyd then
    sends a redraw instead of the program's own screen switches (``flat``).
    """
    import gc
    import signal  # here, with termios and tty: only attach needs them (start-up)
    import termios
    import tty

    from orca.client.terminal import LocalTerminalStream
    from orca.model.vt import ENTER_ALTERNATE_SCREEN, RESTORE_USER_TERMINAL

    out = sys.stdout.buffer
    attachment, screen = LocalTerminalStream.open(args.id, flat=True)  # its Unix socket
    stdin = sys.stdin.fileno()
    saved = termios.tcgetattr(stdin)
    resized = [True]
    old_handler = signal.signal(signal.SIGWINCH, lambda s, f: resized.__setitem__(0, True))

    def end_attachment(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)  # unwinds through the finally below

    old_term = signal.signal(signal.SIGTERM, end_attachment)
    old_hup = signal.signal(signal.SIGHUP, end_attachment)
    reason = "detached"
    try:
        tty.setraw(stdin)
        # The outer alternate screen, then the redraw (it clears): no scrollback replay.
        out.write(ENTER_ALTERNATE_SCREEN + screen)
        out.flush()
        stdout = sys.stdout.fileno()
        gc.freeze()  # the imports live as long as we do: no full collection walks them
        reason = _attach_loop(attachment, stdin, lambda data: _write_all(stdout, data), resized)
    except OrcaError as exc:
        reason = f"error: {exc.message}"
    except SystemExit as exc:
        reason = f"ended by signal {int(exc.code or 0) - 128}"
    finally:
        try:
            out.write(RESTORE_USER_TERMINAL)
            out.flush()
            termios.tcsetattr(stdin, termios.TCSADRAIN, saved)
        except (OSError, termios.error):
            pass  # the terminal is gone (hang-up): nothing left to restore
        signal.signal(signal.SIGWINCH, old_handler)
        signal.signal(signal.SIGTERM, old_term)
        signal.signal(signal.SIGHUP, old_hup)
        attachment.close()
    try:
        print(f"\r\n[{reason}]")
    except OSError:
        pass  # no terminal to say it on
    return EXIT_OK


def show_ended_session(session_id: str) -> int | None:
    """``attach`` of a session that has ended (issue 13: exited, or from before ptyd's
    start): print its final screen - ptyd's terminal model, as of its last output - then
    put the terminal back and say how it ended. Returns the exit code, or None when the
    session still runs (the caller attaches as usual). Needs no terminal on stdin."""
    from orca.client.sync import invoke
    from orca.contracts import ptyd
    from orca.model.vt import RESTORE_USER_TERMINAL

    reply = invoke(ptyd.ATTACH, ptyd.AttachArgs(session_id=session_id))  # no lease
    if reply.running or not reply.output_ended:
        return None
    code = -1 if reply.exit_code is None else reply.exit_code
    out = sys.stdout.buffer
    out.write(reply.data)
    out.write(RESTORE_USER_TERMINAL)
    out.flush()
    how = (
        "ended, exit code unknown (Orca did not see it end)"
        if code == -1
        else f"exited with code {code}"
    )
    print(f"\r\n[{how}; `orca term read` prints its output]")
    return code


def _write_all(fd: int, data: bytes) -> None:
    """Write to the terminal unbuffered (a keystroke's echo must not wait in a buffer)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _attach_loop(
    attachment: LocalTerminalStream,
    stdin: int,
    write: Callable[[bytes], object],
    resized: list[bool],
) -> str:
    """Keys up, output down, until Ctrl-], the session's end or the terminal's.

    Kept minimal (measured: ``bench/pty.py``'s ``attach`` echo): one ``poll`` on the
    two raw descriptors, a keystroke is one ``read`` and one ``send``, output is read
    only when the socket woke us (or to reconnect after a timeout), and the ping is
    due every ``STREAM_PING_S`` only (``keepalive`` is a clock read otherwise).
    """
    import select

    poller = select.poll()
    poller.register(stdin, select.POLLIN)
    poller.register(attachment.fileno(), select.POLLIN)  # the same number on reconnect
    poll, send_keys, take_output = poller.poll, attachment.write, attachment.poll_output
    while True:
        ready = poll(POLL_MS)
        # A resize is applied before the keys that woke us: typed after the window
        # changed, they must run at the new size (SIGWINCH's handler ran during poll).
        if resized[0]:
            resized[0] = False
            size = os.get_terminal_size()
            attachment.resize(size.columns, size.lines)
        output = not ready  # a timeout: poll_output reconnects to a ptyd that came back
        for fd, _events in ready:
            if fd != stdin:
                output = True
                continue
            keys = os.read(stdin, 4096)
            if not keys:
                return "detached (the terminal closed)"
            if DETACH_KEY in keys:
                before = keys.split(DETACH_KEY, 1)[0]
                if before:
                    send_keys(before)
                return "detached"
            send_keys(keys)
        if output:
            for fresh, repaint in take_output():
                write(CLEAR_SCREEN + fresh if repaint else fresh)
        attachment.keepalive()  # keeps it attached and counted in term.list's subscribers
        if attachment.ended:
            return f"exited {attachment.exit_code}"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    import argparse

    term = sub.add_parser("term", help="terminals owned by ptyd (outlive every UI)")
    tsub = term.add_subparsers(dest="term_command", metavar="SUBCOMMAND")

    p = tsub.add_parser(
        "new", help="start a command in a new terminal of a worktree; prints its handle"
    )
    p.add_argument("worktree", help="worktree: handle, name, path or id")
    options = argparse.ArgumentParser(prog=p.prog, add_help=False)  # options typed after it
    for parser in (p, options):
        parser.add_argument("--cwd", help="working directory (default: the worktree)")
        parser.add_argument(
            "-e",
            "--env",
            action="append",
            metavar="NAME=VALUE",
            help="set a variable in the terminal (repeatable); the rest of its environment "
            "is this shell's",
        )
        parser.add_argument(
            "--json", action="store_true", help='print {"session": {handle, sessionId, ...}}'
        )
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ARGS... (default: $SHELL)")
    p.set_defaults(func=_new, new_options=options)

    p = tsub.add_parser(
        "resume",
        help="start an ended agent pane again on its own conversation (same pane, worktree "
        "and folder; the agent's resume command with the session its hooks bound)",
    )
    p.add_argument("id", help="terminal: handle, worktree name, hex prefix or id")
    p.add_argument(
        "--rerun", action="store_true", help="run its command again instead, a new conversation"
    )
    p.add_argument("--json", action="store_true", help='print {"session": {handle, argv, ...}}')
    p.set_defaults(func=_resume)

    p = tsub.add_parser(
        "fork",
        help="a new worktree from the agent's (its uncommitted work carried over) and a new "
        "pane there running a fork of its conversation",
    )
    p.add_argument("id", help="terminal: handle, worktree name, hex prefix or id")
    p.add_argument("--name", help="the new worktree's name (default: <worktree>-fork-XXXX)")
    p.add_argument("--json", action="store_true", help='print {"fork": {handle, worktree, ...}}')
    p.set_defaults(func=_fork)

    p = tsub.add_parser("ls", help="list terminal sessions")
    p.add_argument("--json", action="store_true", help='print {"sessions": [...]}')
    p.add_argument(
        "--all",
        action="store_true",
        help="also ended terminals (history kept across down, crashes, reboots) and "
        "saved pane bindings to terminals that are gone",
    )
    p.set_defaults(func=_ls)

    p = tsub.add_parser("attach", help="attach this terminal (Ctrl-] detaches)")
    p.add_argument("id", help="terminal: handle, worktree name, hex prefix or id")
    p.set_defaults(func=_with_session(_attach))

    p = tsub.add_parser("send", help="type TEXT into a session")
    p.add_argument("id", help="terminal: handle, worktree name, hex prefix or id")
    p.add_argument("text")
    p.add_argument("--enter", action="store_true", help="press Enter after the text")
    p.set_defaults(func=_with_session(_send))

    p = tsub.add_parser("read", help="print a session's scrollback (or output since an offset)")
    p.add_argument("id", help="terminal: handle, worktree name, hex prefix or id")
    p.add_argument("--since", type=int, default=None)
    p.set_defaults(func=_with_session(_read))

    p = tsub.add_parser("kill", help="end a session's process (SIGTERM, then SIGKILL)")
    p.add_argument("id", help="terminal: handle, worktree name, hex prefix or id")
    p.add_argument("--signal", help="send this signal instead (e.g. INT, HUP)")
    p.set_defaults(func=_with_session(_kill))

    p = tsub.add_parser(
        "close", help="close the pane: kill, forget the session and its history, fence its status"
    )
    p.add_argument("id", help="terminal: handle, worktree name, hex prefix or id")
    p.set_defaults(func=_with_session(_close))
