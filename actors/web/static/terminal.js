// The dashboard's live terminal (`#/term/<sessionId>`): xterm.js over the web actor's
// terminal socket (actors/web/sockets.py). Loaded before app.js, whose helpers (`el`,
// `view`, `can`, `state`) it uses once the page runs.
//
// Who sets the size (docs/web.md, "One terminal, several screens"): a PTY has one size,
// the one the client that resized it last asked for, and every client draws at that
// size. Invariant: this page's terminal is drawn at the PTY's size as last heard (the
// `size` before each screen, the page's own Fit, or another client's resize seen on the
// board, which is then redrawn by ptyd at the new size). The page resizes the PTY only
// when told to (Fit) and, once it has, again whenever its terminal area changes size
// (a phone turned); until then it says when the PTY's size is not what fits here.
"use strict";

// xterm.js's font size: FONT_PX unless fewer than MIN_COLS columns would fit, then
// smaller, down to MIN_FONT_PX (a 390 px phone keeps 40 readable columns or more).
const FONT_PX = 14;
const MIN_FONT_PX = 11;
const MIN_COLS = 40;
// A rotation or a dragged window edge reports many sizes: one re-fit once they settle.
const REFIT_SETTLE_MS = 150;
const SIZE_RULE = "A terminal has one size: the client that resized it last (Fit, orca ui, " +
  "orca term attach) set it; the others draw at that size.";

function closeTerminal() {
  const terminal = state.terminal;
  if (!terminal) return;
  terminal.closed = true;
  if (terminal.socket) terminal.socket.close();
  terminal.watcher.disconnect();
  clearTimeout(terminal.settle);
  terminal.term.dispose();
  state.terminal = null;
  document.body.classList.remove("term-open");
}

function renderTerminal(sessionId) {
  const holder = el("div", { id: "terminal", dataset: { sessionId } });
  const fit = el("button", { type: "button", id: "fit", hidden: !can("type"), onclick: () => fitToScreen() }, "Fit to this screen");
  const status = el("span", { id: "term-status", class: "muted" }, "connecting…");
  const size = el("div", { id: "term-size", class: "muted", title: SIZE_RULE });
  document.body.classList.add("term-open");
  view(el("div", { class: "term-bar terminal-bar" }, el("a", { href: "#/" }, "← board"), fit, status), size, holder);
  const term = new Terminal({
    convertEol: false, cursorBlink: true, scrollback: 5000, fontSize: FONT_PX,
    theme: { background: "#101418", foreground: "#e8e8e8", cursor: "#e8e8e8" },
  });
  const fitAddon = new FitAddon.FitAddon();
  term.loadAddon(fitAddon);
  term.open(holder);
  const terminal = {
    sessionId, term, fitAddon, offset: null, closed: false, socket: null, canType: false,
    fitted: null, // the size this page's Fit gave the PTY: it fits again when the area changes
    // The PTY's size as the board last said it (to notice another client's resize).
    boardSize: state.board ? boardSize(state.board, sessionId) : null,
    settle: null, watcher: null,
  };
  state.terminal = terminal;
  term.onData((data) => send({ t: "in", d: data }));
  term.onBinary((data) => send({ t: "in", d: data }));
  term.onResize(() => showSize(terminal));
  // The area's size follows the window (a phone turned): observed, debounced. Its border
  // box: scrollbars coming and going (another client's larger size) do not count.
  terminal.watcher = new ResizeObserver(() => {
    clearTimeout(terminal.settle);
    terminal.settle = setTimeout(() => areaResized(terminal), REFIT_SETTLE_MS);
  });
  terminal.watcher.observe(holder, { box: "border-box" });
  chooseFont(terminal);
  showSize(terminal);
  window.orcaTerminal = term; // for the browser tests: what the page's terminal shows
  connectTerminal();
}

function send(message) {
  const terminal = state.terminal;
  if (terminal && terminal.canType && terminal.socket && terminal.socket.readyState === 1) {
    terminal.socket.send(JSON.stringify(message));
    return true;
  }
  return false;
}

// The largest font (FONT_PX at most) at which MIN_COLS columns fit, if one does; what
// fits the area at that font (undefined while the area is not laid out).
function chooseFont(terminal) {
  const { term, fitAddon } = terminal;
  let px = FONT_PX;
  term.options.fontSize = px;
  let fits = fitAddon.proposeDimensions();
  while (fits && fits.cols < MIN_COLS && px > MIN_FONT_PX) {
    px -= 1;
    term.options.fontSize = px;
    fits = fitAddon.proposeDimensions();
  }
  return fits;
}

// Fit: this page's terminal and the PTY both take what fits the area (the page first,
// so the program's redraw at the new size is drawn at it).
function fitToScreen() {
  const terminal = state.terminal;
  // Not before the first screen: drawn at the size ptyd had when it made it, it would
  // undo a resize sent ahead of it.
  if (!terminal || terminal.offset === null) return;
  const fits = chooseFont(terminal);
  if (!fits || !send({ t: "resize", cols: fits.cols, rows: fits.rows })) return;
  terminal.fitted = fits;
  terminal.term.resize(fits.cols, fits.rows);
  showSize(terminal);
}

// Once this page took the size, a new area size is a new Fit (as a resized window is for
// orca ui and orca term attach); an area that did not change takes nothing back.
function areaResized(terminal) {
  if (terminal.closed) return;
  const fits = chooseFont(terminal);
  const fitted = terminal.fitted;
  if (fitted && fits && (fits.cols !== fitted.cols || fits.rows !== fitted.rows)) fitToScreen();
  else showSize(terminal);
}

// The PTY's size, and whether it is what fits here (else who set it, and the way back).
function showSize(terminal) {
  const { term } = terminal;
  const fits = terminal.fitAddon.proposeDimensions();
  const holder = document.getElementById("terminal");
  const label = document.getElementById("term-size");
  if (!holder || !label || terminal.closed) return;
  holder.dataset.cols = String(term.cols);
  holder.dataset.rows = String(term.rows);
  holder.dataset.fits = fits ? `${fits.cols}x${fits.rows}` : "";
  const here = !fits || (fits.cols === term.cols && fits.rows === term.rows);
  label.dataset.fitsHere = String(here);
  const shown = `${term.cols}×${term.rows}`;
  if (here) label.textContent = shown;
  else label.textContent = `${shown}: sized by another client` + (can("type") ? "; Fit to take it" : "");
  document.getElementById("fit").classList.toggle("wanted", !here);
}

// A new board: when it says the PTY took a size this page does not draw (another client
// resized it), ptyd redraws the screen at that size for this page (a fresh attach).
function followBoard(board) {
  const terminal = state.terminal;
  if (!terminal) return;
  const size = boardSize(board, terminal.sessionId);
  if (!size) return;
  const before = terminal.boardSize;
  terminal.boardSize = size;
  // A board read before this page's own Fit reached ptyd still names the old size: only
  // a size the board had not said before is news.
  const moved = before !== null && (before.cols !== size.cols || before.rows !== size.rows);
  const drawn = size.cols === terminal.term.cols && size.rows === terminal.term.rows;
  if (moved && !drawn && terminal.offset !== null) redrawTerminal(terminal);
}

function boardSize(board, sessionId) {
  for (const worktree of board.worktrees) {
    const row = worktree.terminals.find((t) => t.sessionId === sessionId);
    if (row) return { cols: row.cols, rows: row.rows };
  }
  return null;
}

function redrawTerminal(terminal) {
  const old = terminal.socket;
  if (old) { old.onclose = null; old.onmessage = null; old.close(); }
  terminal.offset = null; // no `since`: ptyd sends the screen (and its size) afresh
  connectTerminal();
}

function connectTerminal() {
  const terminal = state.terminal;
  const since = terminal.offset === null ? "" : `?since=${terminal.offset}`;
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/ws/term/${encodeURIComponent(terminal.sessionId)}${since}`);
  socket.binaryType = "arraybuffer";
  terminal.socket = socket;
  const status = () => document.getElementById("term-status");
  socket.onmessage = (event) => {
    if (typeof event.data === "string") {
      const message = JSON.parse(event.data);
      if (message.t === "mode") {
        terminal.canType = message.type;
      } else if (message.t === "size") {
        terminal.term.resize(message.cols, message.rows);
        showSize(terminal);
      } else if (message.t === "exit") {
        terminal.exited = true;
        status().textContent = `exited ${message.code === null ? "" : message.code}`;
      } else if (message.t === "error") {
        status().textContent = message.message;
      }
      return;
    }
    const view8 = new DataView(event.data);
    const kind = view8.getUint8(0);
    terminal.offset = Number(view8.getBigUint64(1));
    const bytes = new Uint8Array(event.data, 9);
    if (kind === 1) terminal.term.reset();
    terminal.term.write(bytes);
    const live = terminal.canType ? "live" : "live (view only)";
    if (status().textContent !== live) status().textContent = live;
    terminal.term.element.dataset.offset = String(terminal.offset);
  };
  socket.onclose = (event) => {
    if (terminal.closed || terminal.exited) return;
    if (event.code === 4401 || event.code === 1008) { location.reload(); return; }
    status().textContent = "reconnecting…";
    setTimeout(() => { if (!terminal.closed && terminal.socket === socket) connectTerminal(); }, 1000);
  };
}
