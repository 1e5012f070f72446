// The Orca dashboard: the board (every worktree, its agents' lights, what waits for
// you), a live terminal per pane, a worktree's review, approvals. Everything it shows
// comes from the web actor (actors/web); it keeps no state of its own but the offset
// of the terminal it shows (to resume without a redraw). The terminal view is
// terminal.js's.
"use strict";

const LIGHTS = {
  working: "●", blocked: "■", waiting: "◆", done: "✓", idle: "○", exited: "✗", gone: "·",
};
const state = {
  me: null, board: null, boardSocket: null, notified: new Set(), firstBoard: true,
  terminal: null,
};

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function view(...children) {
  const main = document.getElementById("view");
  main.replaceChildren(...children);
}

async function api(path, options) {
  const response = await fetch(path, Object.assign({ credentials: "same-origin" }, options || {}));
  let body = null;
  try { body = await response.json(); } catch (_) { body = null; }
  if (!response.ok) {
    const error = new Error((body && body.error) || response.statusText);
    error.status = response.status;
    throw error;
  }
  return body;
}

function post(path, body) {
  return api(path, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
}

function age(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return s + "s";
  if (s < 3600) return Math.round(s / 60) + "m";
  return Math.round(s / 3600) + "h";
}

function can(scope) {
  return state.me && state.me.scopes.includes(scope);
}

// -- signing in ---------------------------------------------------------------------------
async function signIn() {
  const fragment = new URLSearchParams(location.hash.replace(/^#/, ""));
  const token = fragment.get("token"), code = fragment.get("pair");
  if (token || code) {
    // The secret lived only in the fragment: it never reached a server or a log; drop it
    // from the address bar and history before anything else.
    history.replaceState(null, "", location.pathname + "#/");
    try {
      state.me = await post("/api/session", token ? { token } : { code });
      return true;
    } catch (error) {
      view(el("section", { class: "card", id: "login-failed" },
        el("h2", {}, "Not signed in"), el("p", {}, error.message)));
      return false;
    }
  }
  try {
    state.me = await api("/api/me");
    return true;
  } catch (_) {
    view(el("section", { class: "card", id: "login" },
      el("h2", {}, "This browser is not paired"),
      el("p", {}, "On the machine that runs Orca: ", el("code", {}, "orca web pair"),
        ", then scan the code it shows (or open its link).")));
    return false;
  }
}

// -- the board ------------------------------------------------------------------------------
function openBoardSocket() {
  const socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws/board`);
  state.boardSocket = socket;
  socket.onmessage = (event) => {
    state.board = JSON.parse(event.data);
    notifyNew(state.board);
    renderHeader();
    if (currentRoute().name === "board") renderBoard();
    else followBoard(state.board); // another client may have resized the terminal shown
  };
  socket.onclose = (event) => {
    if (event.code === 4401 || event.code === 1008) { location.reload(); return; }
    setTimeout(openBoardSocket, 1000);
  };
}

function renderHeader() {
  const board = state.board;
  if (!board) return;
  document.getElementById("needs").textContent = board.needsYou ? `${board.needsYou} need you` : "";
  document.getElementById("down").textContent = board.down && board.down.length ? `down: ${board.down.join(", ")}` : "";
}

function agentRow(agent) {
  const shown = agent.displayState;
  return el("li", {
    class: `agent state-${shown}`, dataset: { paneKey: agent.paneKey, state: shown },
  },
  el("span", { class: "light", title: shown }, LIGHTS[shown] || "?"),
  agent.unread ? el("span", { class: "unread", title: "not seen yet" }, "*") : null,
  el("span", { class: "handle" }, agent.handle || agent.paneKey),
  el("span", { class: "what" }, `${agent.agent} ${shown}`),
  agent.detail ? el("span", { class: "detail" }, agent.detail) : null,
  el("span", { class: "age muted" }, age(agent.ageMs)));
}

function permissionCard(ask) {
  const buttons = can("approve") ? [
    el("button", { type: "button", class: "allow", dataset: { action: "allow" }, onclick: () => answer(ask, "allow") }, "Approve"),
    el("button", { type: "button", class: "deny", dataset: { action: "deny" }, onclick: () => answer(ask, "deny") }, "Deny"),
  ] : [el("span", { class: "muted" }, "this device may not approve")];
  return el("section", { class: "card ask", dataset: { requestId: ask.requestId, paneKey: ask.paneKey } },
    el("h3", {}, `${ask.handle || ask.worktree} wants to run ${ask.toolName || "a tool"}`),
    el("pre", { class: "summary" }, ask.summary || "(no details)"),
    el("div", { class: "buttons" }, buttons));
}

async function answer(ask, behavior) {
  try {
    const result = await post(`/api/permissions/${encodeURIComponent(ask.requestId)}`, { behavior });
    if (result.outcome === "already_settled") {
      flash(`already answered: ${result.settled} (${result.by})`);
    }
  } catch (error) {
    flash(error.message);
  }
}

function flash(text) {
  const note = el("div", { class: "flash" }, text);
  document.body.append(note);
  setTimeout(() => note.remove(), 4000);
}

function worktreeCard(worktree) {
  const terminals = worktree.terminals.filter((t) => t.running);
  return el("section", {
    class: `card worktree summary-${worktree.summary.state}`, dataset: { worktreeId: worktree.worktreeId },
  },
  el("h2", {},
    el("span", { class: "light" }, LIGHTS[worktree.summary.state] || "○"),
    el("span", { class: "name" }, worktree.handle),
    worktree.branch ? el("span", { class: "branch muted" }, worktree.branch) : null,
    worktree.dirty ? el("span", { class: "dirty muted" }, `${worktree.dirty} changed`) : null,
    el("a", { class: "review-link", href: `#/review/${encodeURIComponent(worktree.worktreeId)}` }, "review")),
  worktree.agents.length ? el("ul", { class: "agents" }, worktree.agents.map(agentRow)) : null,
  terminals.length ? el("ul", { class: "terminals" }, terminals.map((t) => el("li", {},
    el("a", { class: "terminal-link", href: `#/term/${encodeURIComponent(t.sessionId)}`, dataset: { sessionId: t.sessionId } },
      `▸ ${t.handle}`), el("span", { class: "muted" }, ` ${t.command}`)))) : null);
}

function automationRow(automation) {
  const last = automation.last;
  const what = !last ? "never fired"
    : last.status === "started" ? `started run ${last.runId}`
    : `${last.status}: ${last.error}`;
  return el("li", {
    class: `automation last-${last ? last.status : "none"}`, dataset: { automationId: automation.id },
  },
  el("span", { class: "name" }, automation.name),
  el("span", { class: "muted" }, ` ${automation.repo} · ${automation.schedule}${automation.enabled ? "" : " · paused"} · `),
  el("span", { class: "last" }, what));
}

function renderBoard() {
  const board = state.board;
  if (!board) return;
  const asks = board.permissions.map(permissionCard);
  const cards = board.worktrees.map(worktreeCard);
  const automations = board.automations || [];
  view(el("div", { id: "board" },
    asks.length ? el("div", { id: "asks" }, asks) : null,
    cards.length ? cards : el("p", { class: "muted" }, "No worktrees yet."),
    automations.length ? el("section", { class: "card", id: "automations" },
      el("h2", {}, "Automations"), el("ul", {}, automations.map(automationRow))) : null));
}

// -- notifications: only while the page does not have the user's attention -----------------
function needsYou(board) {
  const keys = new Map();
  for (const ask of board.permissions) keys.set(`ask:${ask.requestId}`, `${ask.handle || ask.worktree}: ${ask.toolName} ${ask.summary}`);
  for (const worktree of board.worktrees) {
    for (const agent of worktree.agents) {
      const unreadDone = agent.displayState === "done" && agent.unread;
      if (agent.displayState === "blocked" || unreadDone) {
        keys.set(`agent:${agent.paneKey}:${agent.displayState}`, `${agent.handle || worktree.handle}: ${agent.displayState}`);
      }
    }
  }
  return keys;
}

function notifyNew(board) {
  const keys = needsYou(board);
  const fresh = [...keys].filter(([key]) => !state.notified.has(key));
  state.notified = new Set(keys.keys());
  if (state.firstBoard) { state.firstBoard = false; return; }
  if (!fresh.length || document.hasFocus()) return;
  if (!("Notification" in window) || Notification.permission !== "granted") return;
  for (const [key, text] of fresh) {
    new Notification("Orca: an agent needs you", { body: text, tag: key });
  }
}

function setUpNotifyButton() {
  const button = document.getElementById("notify");
  if (!("Notification" in window) || Notification.permission !== "default") return;
  button.hidden = false;
  button.onclick = async () => {
    await Notification.requestPermission();
    button.hidden = true;
  };
}

// -- review ---------------------------------------------------------------------------------
async function renderReview(worktreeId) {
  view(el("div", { class: "term-bar" }, el("a", { href: "#/" }, "← board")), el("p", { class: "muted" }, "Reading git…"));
  let review;
  try {
    review = await api(`/api/review?worktree=${encodeURIComponent(worktreeId)}`);
  } catch (error) {
    view(el("p", {}, error.message));
    return;
  }
  const diff = el("pre", { id: "diff" });
  const files = el("ul", { id: "files" }, review.files.map((f) => el("li", {},
    el("a", { href: "#", dataset: { path: f.path }, onclick: (e) => { e.preventDefault(); showDiff(worktreeId, review.point, f.path, diff); } },
      `${f.status} ${f.path}`))));
  view(el("div", { class: "term-bar" }, el("a", { href: "#/" }, "← board"),
    el("span", {}, review.error || `${review.files.length} changed against ${review.base}`)),
  el("div", { id: "review" }, files, diff));
  if (review.files.length) showDiff(worktreeId, review.point, review.files[0].path, diff);
}

async function showDiff(worktreeId, point, path, target) {
  const query = new URLSearchParams({ worktree: worktreeId, point, path });
  const { diff } = await api(`/api/diff?${query}`);
  target.replaceChildren(...diff.split("\n").map((line) => el("span", {
    class: line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "",
  }, line + "\n")));
}

// -- routing --------------------------------------------------------------------------------
function currentRoute() {
  const parts = location.hash.replace(/^#\/?/, "").split("/");
  if (parts[0] === "term" && parts[1]) return { name: "term", id: decodeURIComponent(parts.slice(1).join("/")) };
  if (parts[0] === "review" && parts[1]) return { name: "review", id: decodeURIComponent(parts.slice(1).join("/")) };
  return { name: "board" };
}

function route() {
  const next = currentRoute();
  if (!(next.name === "term" && state.terminal && state.terminal.sessionId === next.id)) closeTerminal();
  if (next.name === "term") { if (!state.terminal) renderTerminal(next.id); }
  else if (next.name === "review") renderReview(next.id);
  else renderBoard();
}

async function main() {
  if (!(await signIn())) return;
  setUpNotifyButton();
  window.addEventListener("hashchange", route);
  openBoardSocket();
  route();
}

main();
