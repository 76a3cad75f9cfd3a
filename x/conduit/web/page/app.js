// The chat page of x/conduit/web: it speaks the AI SDK's UI message
// stream that the handler serves at api/chat, with no library and no build
// step. Model text goes through lodeMarkdown (markdown.js, which
// index.html loads first), which builds nodes; everything else is set
// with textContent.
"use strict";
(function () {
  const log = document.getElementById("log");
  const form = document.getElementById("form");
  const input = document.getElementById("input");
  const sendBtn = document.getElementById("send");
  const stopBtn = document.getElementById("stop");
  const list = document.getElementById("threads");
  const modelLabel = document.getElementById("model");
  const spentLabel = document.getElementById("spent");
  const loginBox = document.getElementById("login");
  const loginForm = document.getElementById("login-form");
  const tokenInput = document.getElementById("token");
  const loginError = document.getElementById("login-error");
  const logoutBtn = document.getElementById("logout");
  let thread = location.hash.slice(1);
  let abort = null; // the stream being read, if any
  let info = null;  // GET api/info: the model and the tools offered

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function scroll() { log.scrollTop = log.scrollHeight; }
  function show(v) { return typeof v === "string" ? v : JSON.stringify(v, null, 2); }
  function api(path) { return "api/" + path; }
  function threadPath(id, rest) { return api("threads/" + encodeURIComponent(id) + (rest || "")); }

  // failure shows one plain sentence, with the detail behind a toggle.
  function failure(box, message, detail) {
    const d = el("div", "error");
    d.append(el("p", "error-message", message));
    if (detail && detail !== message) {
      const t = el("details", "error-detail");
      t.append(el("summary", "", "Details"), el("pre", "", detail));
      d.append(t);
    }
    box.append(d);
    return d;
  }
  // refusal turns a refused request's one line ("web: …") into a sentence.
  async function refusal(box, r) {
    const text = (await r.text()).trim();
    let msg = text.replace(/^web: /, "");
    msg = msg.charAt(0).toUpperCase() + msg.slice(1);
    if (!/[.!?]$/.test(msg)) msg += ".";
    failure(box, msg, r.status + " " + r.statusText + ": " + text);
  }

  // --- Logins. A server with tokens answers 401 without credentials: the
  // page then asks for a token, trades it for a session cookie at
  // api/login (HttpOnly: the page never holds it), and loads again. It
  // asks again whenever the session ends (a 401 later on).
  async function request(url, opts) {
    const r = await fetch(url, opts);
    if (r.status === 401) locked();
    return r;
  }
  function locked() {
    if (abort) { abort.switched = true; abort.abort(); }
    document.body.classList.add("locked");
    loginBox.hidden = false;
    logoutBtn.hidden = true;
    info = null;
    modelLabel.textContent = "";
    spentLabel.textContent = "";
    list.replaceChildren();
    log.replaceChildren();
    tokenInput.focus();
  }
  function unlocked() {
    document.body.classList.remove("locked");
    loginBox.hidden = true;
    loginError.textContent = "";
  }
  loginForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const token = tokenInput.value;
    if (!token) return;
    loginError.textContent = "";
    let r;
    try {
      r = await fetch(api("login"), { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token: token }) });
    } catch (e) {
      loginError.textContent = "The server could not be reached.";
      return;
    }
    if (r.status === 401) { loginError.textContent = "That token is not valid."; tokenInput.select(); return; }
    if (r.status === 404) { loginError.textContent = "This server takes no logins here: send the token as a bearer token, or ask your operator."; return; }
    if (!r.ok) { loginError.textContent = "The login failed (" + r.status + "): " + (await r.text()).trim(); return; }
    tokenInput.value = "";
    unlocked();
    start();
  });
  logoutBtn.addEventListener("click", async () => {
    try { await fetch(api("logout"), { method: "POST" }); } catch (_) { /* the cookie is cleared on the next login */ }
    thread = "";
    history.replaceState(null, "", location.pathname);
    locked();
  });

  // --- Markdown text parts, rendered again as their text grows: at most
  // once per 100 ms, and after a render that took t, not for another 4t,
  // so that a long answer's renders take at most a fifth of the page's
  // time however many deltas it has. The render at its end is of the
  // whole text.
  function textPart(box, cls) {
    const e = box.appendChild(el("div", cls));
    e.source = "";
    return e;
  }
  function setText(e, text) {
    e.source = text;
    if (e.pending) return;
    e.pending = true;
    const wait = Math.max(100, 4 * (e.cost || 0)) - (performance.now() - (e.drawnAt || -Infinity));
    setTimeout(() => requestAnimationFrame(() => { e.pending = false; draw(e); }), Math.max(0, wait));
  }
  function textNow(e, text) { e.source = text; draw(e); }
  // draw renders e's text. Text the renderer fails on is shown as written,
  // with a note, and the rest of the thread still shows.
  function draw(e) {
    if (e.drawn === e.source) return;
    const start = performance.now();
    e.drawn = e.source;
    try {
      e.replaceChildren(lodeMarkdown.render(e.source));
      e.classList.remove("unformatted");
    } catch (err) {
      e.classList.add("unformatted");
      e.replaceChildren(el("div", "plain", e.source), el("div", "note render-failed", "This text could not be formatted; it is shown as written."));
    }
    e.drawnAt = performance.now();
    e.cost = e.drawnAt - start;
  }

  // --- Tool cards: the tool's name and state, its Input, then its
  // Output or Error.
  function findCard(box, id) {
    for (const c of box.querySelectorAll("details.tool")) if (c.dataset.toolCallId === id) return c;
    return null;
  }
  function toolCard(box, name, id) {
    const existing = id && findCard(box, id);
    if (existing) return existing;
    const d = el("details", "tool");
    d.dataset.toolCallId = id || "";
    d.dataset.state = "running";
    const s = el("summary");
    s.append(el("span", "tool-name", name), el("span", "tool-state", " …"));
    const inSec = el("div", "tool-input");
    inSec.append(el("div", "label", "Input"), el("pre", "input"));
    const outSec = el("div", "tool-output");
    outSec.hidden = true;
    outSec.append(el("div", "label", "Output"), el("pre", "output"));
    d.append(s, inSec, outSec);
    box.append(d);
    return d;
  }
  function setInput(card, v) { card.querySelector(".input").textContent = show(v); }
  function setState(card, state, mark) {
    card.dataset.state = state;
    card.querySelector(".tool-state").textContent = mark;
  }
  function setOutput(card, v, failed, label) {
    setState(card, failed ? "failed" : "done", failed ? " ✗" : " ✓");
    const sec = card.querySelector(".tool-output");
    sec.hidden = false;
    sec.querySelector(".label").textContent = label || (failed ? "Error" : "Output");
    sec.querySelector(".output").textContent = show(v);
    card.classList.toggle("failed", !!failed);
    if (card.notification) { card.notification.remove(); card.notification = null; }
  }
  function waiting(card) { setState(card, "waiting", " (waiting for approval)"); }
  // setNotification shows the latest progress or log line of a running
  // call under its card; the call's result replaces it.
  function setNotification(box, part) {
    let card = part.id && findCard(box, part.id);
    if (!card) {
      const running = [...box.querySelectorAll("details.tool")].filter(c => c.dataset.state === "running");
      card = running[running.length - 1];
    }
    if (!card || card.dataset.state !== "running") return;
    const d = part.data || {};
    let line = d.message || "";
    if (d.kind === "progress" && d.progress) {
      const n = d.total ? d.progress + "/" + d.total : String(d.progress);
      line = line ? n + " " + line : n;
    }
    if (!line) return;
    // After the card, not in it: a closed card would hide it.
    if (!card.notification) { card.notification = el("div", "notification"); card.after(card.notification); }
    card.notification.textContent = line;
  }

  // --- Approval cards, from the data-approval part the server keeps in
  // the thread while calls wait: a reload, or another device, shows them
  // again. Approve and Deny post the decision and stream the continued
  // answer into the same message.
  function approvalCards(box, data) {
    for (const c of data.calls || []) {
      const card = findCard(box, c.toolCallId);
      if (card) waiting(card);
      const d = el("div", "approval");
      d.dataset.toolCallId = c.toolCallId;
      const q = el("p", "approval-question");
      q.append("Run ", el("code", "tool-name", c.toolName), "?");
      d.append(q);
      if (c.reason) d.append(el("p", "approval-reason", c.reason));
      d.append(el("div", "label", "Input"), el("pre", "input", show(c.input)));
      const yes = el("button", "approve", "Approve"), no = el("button", "deny", "Deny");
      yes.type = no.type = "button";
      const decide = (approve) => {
        if (abort) return;
        yes.disabled = no.disabled = true;
        d.classList.add(approve ? "approved" : "denied");
        const q = d.querySelector(".approval-question");
        const mark = el("span", "approval-outcome", approve ? " Approving…" : " Denying…");
        q.append(mark);
        stream(threadPath(data.threadId || thread, "/decide"), { decisions: [{ id: c.toolCallId, approve: approve }] }, box).then((ok) => {
          // A refused decision (another tab or device decided first) is
          // not this card's: the error below says why.
          mark.textContent = ok ? (approve ? " Approved." : " Denied.") : " Not decided here.";
        });
      };
      yes.addEventListener("click", () => decide(true));
      no.addEventListener("click", () => decide(false));
      const row = el("div", "buttons");
      row.append(yes, no);
      d.append(row);
      box.append(d);
    }
  }

  // --- What an answer used: a line under it from the usage in its
  // message's metadata (a message-metadata part while it streams, the
  // message's metadata in a replay), and the thread's total in the
  // header. An answer whose model reported no usage has no line.
  function count(n) { return Number(n || 0).toLocaleString("en-US"); }
  function usageText(u) {
    let s = count(u.inputTokens) + " tokens in";
    if (u.cachedInputTokens) s += " (" + count(u.cachedInputTokens) + " cached)";
    s += ", " + count(u.outputTokens) + " out";
    if (u.reasoningTokens) s += " (" + count(u.reasoningTokens) + " reasoning)";
    const usd = "$" + Number(u.costUSD || 0).toFixed(4);
    if (u.unpriced) s += "; no price for " + u.unpriced + (u.costUSD > 0 ? ", " + usd + " for the rest" : "");
    else s += ", " + usd;
    return s;
  }
  function setUsage(box, u) {
    if (!u || typeof u !== "object") return;
    box.usage = u;
    let line = box.querySelector(":scope > .usage");
    if (!line) line = el("div", "usage");
    line.textContent = usageText(u);
    box.append(line); // last, under what the answer shows so far
    showTotal();
  }
  // showTotal adds up the answers shown: the thread's total.
  function showTotal() {
    const t = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0, costUSD: 0, unpriced: "" };
    let any = false;
    for (const b of log.querySelectorAll(".msg.assistant")) {
      const u = b.usage;
      if (!u) continue;
      any = true;
      for (const k of ["inputTokens", "cachedInputTokens", "outputTokens", "reasoningTokens", "costUSD"]) t[k] += Number(u[k] || 0);
      if (u.unpriced && !t.unpriced) t.unpriced = u.unpriced;
    }
    spentLabel.textContent = any ? "Thread: " + usageText(t) : "";
  }

  // --- Guards. A data-tripwire part says a guard stopped the turn, and
  // where: the notice names the guard, gives its reason and says what did
  // not happen. The server sends at most one per message (its id is
  // "tripwire"); a later one takes its place, as the AI SDK's client
  // does. At output the answer was withheld: the text it streamed before
  // the guard stopped it (held a window behind the model, so never what
  // the guard stopped) is taken away, as a reload, which has none, shows.
  const tripWhere = {
    input: "Your message was not sent to the model.",
    call: "The call did not run.",
    result: "The tool's result was withheld.",
    output: "The answer was withheld.",
  };
  function tripwireNote(box, d, step) {
    d = d && typeof d === "object" ? d : {};
    const n = el("div", "tripwire");
    n.setAttribute("role", "status");
    n.dataset.guard = String(d.guard || "");
    n.dataset.at = String(d.at || "");
    const p = el("p", "tripwire-message");
    p.append("Stopped by guard ", el("code", "guard-name", String(d.guard || "unnamed")), ": " + String(d.reason || "no reason given"));
    n.append(p);
    if (Object.prototype.hasOwnProperty.call(tripWhere, d.at)) n.append(el("p", "tripwire-where", tripWhere[d.at]));
    if (d.toolCallId) {
      const c = findCard(box, String(d.toolCallId));
      if (c) c.classList.add("tripped");
    }
    if (d.at === "output" && step) for (const e of step) e.remove();
    const old = box.querySelector(":scope > .tripwire");
    if (old) old.replaceWith(n); else box.append(n);
  }

  function stoppedNote(box) {
    if (!box.querySelector(":scope > .stopped")) box.append(el("div", "note stopped", "Stopped."));
  }

  function messageBox(role, id) {
    const box = el("div", "msg " + role);
    if (id) box.dataset.messageId = id;
    log.append(box);
    return box;
  }

  function renderMessage(m) {
    const box = messageBox(m.role, m.id);
    for (const p of m.parts || []) {
      // A part that cannot be shown is a note; the parts after it, and
      // the messages after this one, still show.
      try {
        if (p.type === "text") {
          if (m.role === "user") box.append(el("div", "text plain", p.text));
          else textNow(textPart(box, "text"), p.text);
        } else if (p.type === "reasoning") textNow(textPart(box, "reasoning"), p.text);
        else if (p.type.startsWith("tool-")) {
          const c = toolCard(box, p.type.slice(5), p.toolCallId);
          setInput(c, p.input);
          if (p.state === "output-available") setOutput(c, p.output, false);
          else if (p.state === "output-error") setOutput(c, p.errorText, true);
          else if (p.state === "output-denied") setOutput(c, "The call was denied.", true, "Denied");
          else if (p.state === "approval-requested") waiting(c);
          else if (p.state === "approval-responded") setState(c, "running", " …");
        } else if (p.type === "data-approval") approvalCards(box, p.data);
        else if (p.type === "data-stopped") stoppedNote(box);
        else if (p.type === "data-tripwire") tripwireNote(box, p.data, null);
      } catch (err) {
        box.append(el("div", "note render-failed", "A part of this message could not be shown."));
      }
    }
    if (m.role === "assistant" && m.metadata) setUsage(box, m.metadata.usage);
    if (m.metadata && m.metadata.branch) branchControls(box, m.metadata.branch);
    if (m.role === "user") editButton(box);
    else regenerateButton(box);
    box.dataset.done = "true";
    return box;
  }

  // --- Branches. An edited message or a regenerated answer starts a
  // branch of the conversation; the server keeps every branch. A message
  // with versions on other branches shows "‹ 2/3 ›": the arrows show the
  // branch with the version before or after.
  function branchControls(box, b) {
    if (!b || !(b.count > 1) || !Array.isArray(b.branches)) return;
    const nav = el("div", "branch");
    nav.setAttribute("role", "group");
    nav.setAttribute("aria-label", "Versions of this message");
    const prev = el("button", "branch-prev", "‹"), next = el("button", "branch-next", "›");
    prev.type = next.type = "button";
    prev.setAttribute("aria-label", "Show version " + (b.index - 1) + " of " + b.count);
    next.setAttribute("aria-label", "Show version " + (b.index + 1) + " of " + b.count);
    prev.disabled = b.index <= 1;
    next.disabled = b.index >= b.count;
    const where = el("span", "branch-index", b.index + "/" + b.count);
    prev.addEventListener("click", () => showBranch(b.branches[b.index - 2]));
    next.addEventListener("click", () => showBranch(b.branches[b.index]));
    nav.append(prev, where, next);
    box.append(nav);
    usageLast(box);
  }
  // usageLast keeps an answer's usage line under everything else in it.
  function usageLast(box) {
    const line = box.querySelector(":scope > .usage");
    if (line) box.append(line);
  }
  async function showBranch(id) {
    if (!id || abort || !thread) return;
    let r;
    try {
      r = await request(threadPath(thread, "/branch"), { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ branch: id }) });
    } catch (e) {
      failure(messageBox("assistant"), "The server could not be reached.", String(e));
      return;
    }
    if (r.status === 401) return;
    if (!r.ok) { await refusal(messageBox("assistant"), r); return; }
    render(await r.json());
  }

  // --- Edits. A stored user message has an Edit button: the edited text
  // goes to the server as the AI SDK's Chat sends it (the messages up to
  // the edited one, and its ID), and its answer streams on a new branch.
  function editButton(box) {
    const id = box.dataset.messageId || "";
    if (!id.startsWith("turn-") || box.querySelector(":scope > .edit")) return;
    // The label is the style's (app.css), so that the message's text is
    // its own; the aria-label names the button.
    const b = el("button", "edit");
    b.type = "button";
    b.setAttribute("aria-label", "Edit this message");
    b.addEventListener("click", () => startEdit(box));
    box.append(b);
  }
  // A stored answer has a Regenerate button: it is answered again on a
  // new branch, and the arrows show this one again.
  function regenerateButton(box) {
    const id = box.dataset.messageId || "";
    if (!id.startsWith("turn-") || box.querySelector(":scope > .regenerate")) return;
    const b = el("button", "regenerate");
    b.type = "button";
    b.setAttribute("aria-label", "Answer again");
    b.addEventListener("click", () => {
      if (abort || !thread) return;
      let after = box.nextElementSibling;
      while (after) { const n = after.nextElementSibling; after.remove(); after = n; }
      box.remove();
      showTotal();
      stream(api("chat"), { id: thread, trigger: "regenerate-message", messageId: id, messages: [] }, null, { done: load });
    });
    box.append(b);
    usageLast(box);
  }
  function startEdit(box) {
    if (abort || box.querySelector(":scope > .editor")) return;
    const shown = box.querySelector(":scope > .text");
    const f = el("div", "editor");
    const area = el("textarea", "edit-input");
    area.value = shown ? shown.textContent : "";
    area.rows = 3;
    area.setAttribute("aria-label", "Edited message");
    const save = el("button", "edit-save", "Send edit"), cancel = el("button", "edit-cancel", "Cancel");
    save.type = cancel.type = "button";
    f.append(area, save, cancel);
    box.append(f);
    area.focus();
    cancel.addEventListener("click", () => f.remove());
    save.addEventListener("click", () => {
      const text = area.value.trim();
      if (!text || abort) return;
      edit(box, text);
    });
  }
  async function edit(box, text) {
    let r;
    try { r = await request(threadPath(thread)); } catch (e) {
      failure(box, "The server could not be reached.", String(e));
      return;
    }
    if (!r.ok) { await refusal(box, r); return; }
    const t = await r.json();
    const id = box.dataset.messageId;
    const k = t.messages.findIndex((m) => m.id === id);
    if (k < 0 || t.messages[k].role !== "user") { failure(box, "This message is no longer in the conversation: load it again."); return; }
    const msgs = t.messages.slice(0, k).map((m) => ({ id: m.id, role: m.role, parts: m.parts }));
    msgs.push({ id: id, role: "user", parts: [{ type: "text", text: text }] });
    // What the edit replaces leaves the page; the server keeps it on the
    // branch left, which the arrows show again.
    let after = box.nextElementSibling;
    while (after) { const n = after.nextElementSibling; after.remove(); after = n; }
    box.replaceChildren(el("div", "text plain", text));
    showTotal();
    stream(api("chat"), { id: thread, trigger: "submit-message", messageId: id, messages: msgs }, null, { done: load });
  }

  // --- The first screen: the model and the tools this caller is offered.
  function welcome() {
    const w = el("section", "welcome");
    w.id = "welcome";
    if (!info) { w.append(el("p", "", "Loading…")); return w; }
    const m = el("p", "welcome-model");
    m.append("Model: ", el("strong", "", info.model || "not named"));
    w.append(m);
    if (!info.tools || info.tools.length === 0) {
      w.append(el("p", "welcome-tools-none", "No tools are offered to you."));
    } else {
      w.append(el("p", "", info.tools.length === 1 ? "One tool is offered to you:" : info.tools.length + " tools are offered to you:"));
      const ul = el("ul", "welcome-tools");
      for (const t of info.tools) {
        const li = el("li");
        li.append(el("code", "tool-name", t.name));
        if (t.description) li.append(" — " + t.description);
        ul.append(li);
      }
      w.append(ul);
    }
    return w;
  }
  function showWelcome() {
    const old = document.getElementById("welcome");
    if (old) old.remove();
    if (!log.querySelector(".msg")) log.prepend(welcome());
  }
  async function loadInfo() {
    try {
      const r = await request(api("info"));
      if (r.status === 401) return;
      if (r.ok) info = await r.json();
      else info = null;
    } catch (_) { info = null; }
    modelLabel.textContent = info && info.model ? info.model : "";
    logoutBtn.hidden = !(info && info.session);
    if (info && info.user) logoutBtn.title = "Logged in as " + info.user;
    showWelcome();
  }

  // --- The thread list.
  async function loadThreads() {
    let r;
    try { r = await request(api("threads")); } catch (_) { return; }
    if (!r.ok) return;
    const v = await r.json();
    list.replaceChildren();
    for (const t of v.threads || []) {
      const li = el("li");
      const b = el("button", "thread", t.title || "New conversation");
      b.type = "button";
      b.dataset.threadId = t.id;
      if (t.updated) b.title = new Date(t.updated).toLocaleString();
      if (t.id === thread) { b.classList.add("current"); b.setAttribute("aria-current", "true"); }
      b.addEventListener("click", () => switchTo(t.id));
      li.append(b);
      list.append(li);
    }
  }
  function markCurrent() {
    for (const b of list.querySelectorAll("button.thread")) {
      const cur = b.dataset.threadId === thread;
      b.classList.toggle("current", cur);
      if (cur) b.setAttribute("aria-current", "true"); else b.removeAttribute("aria-current");
    }
  }
  function switchTo(id) {
    if (abort) { abort.switched = true; abort.abort(); }
    thread = id;
    history.replaceState(null, "", id ? "#" + id : location.pathname);
    markCurrent();
    load();
  }

  async function load() {
    log.replaceChildren();
    showTotal();
    if (!thread) { showWelcome(); return; }
    let r;
    try { r = await request(threadPath(thread)); } catch (e) {
      failure(messageBox("assistant"), "The server could not be reached.", String(e));
      return;
    }
    if (r.status === 401) return;
    if (!r.ok) { await refusal(messageBox("assistant"), r); return; }
    render(await r.json());
  }

  // render shows t, a thread as GET api/threads/{id} answers it.
  function render(t) {
    if (t.id !== thread) return; // another thread was chosen meanwhile
    log.replaceChildren();
    t.messages.forEach(renderMessage);
    showTotal();
    showWelcome();
    scroll();
    // A turn still running: follow it from its start.
    if (t.running) stream(api("chat/" + encodeURIComponent(thread) + "/stream"), null, null);
  }

  // apply renders one stream part into the assistant box.
  function apply(box, part, state) {
    switch (part.type) {
      case "start":
        if (part.messageMetadata && part.messageMetadata.threadId && !thread) {
          thread = part.messageMetadata.threadId;
          history.replaceState(null, "", "#" + thread);
          state.newThread = true;
        }
        if (part.messageId) box.dataset.messageId = part.messageId;
        // A message sent is stored just before its answer: its ID is the
        // turn before the answer's, and it can be edited from now on.
        if (state.user && /^turn-\d+$/.test(part.messageId || "")) {
          state.user.dataset.messageId = "turn-" + (Number(part.messageId.slice(5)) - 1);
          editButton(state.user);
          state.user = null;
        }
        if (part.messageMetadata) setUsage(box, part.messageMetadata.usage);
        break;
      case "message-metadata":
      case "finish":
        if (part.messageMetadata) setUsage(box, part.messageMetadata.usage);
        break;
      // The parts a model turn shows, for an output guard's trip to take back.
      case "start-step": state.step = []; break;
      case "text-start": state.parts[part.id] = textPart(box, "text"); state.step.push(state.parts[part.id]); break;
      case "text-delta": { const e = state.parts[part.id]; if (e) setText(e, e.source + part.delta); break; }
      case "text-end": { const e = state.parts[part.id]; if (e) textNow(e, e.source); break; }
      case "reasoning-start": state.parts[part.id] = textPart(box, "reasoning"); state.step.push(state.parts[part.id]); break;
      case "reasoning-delta": { const e = state.parts[part.id]; if (e) setText(e, e.source + part.delta); break; }
      case "reasoning-end": { const e = state.parts[part.id]; if (e) textNow(e, e.source); break; }
      case "tool-input-start": {
        const c = toolCard(box, part.toolName, part.toolCallId);
        c.querySelector(".input").textContent = "";
        if (!state.step.includes(c)) state.step.push(c);
        break;
      }
      case "tool-input-delta": {
        const c = findCard(box, part.toolCallId);
        if (c) c.querySelector(".input").textContent += part.inputTextDelta;
        break;
      }
      case "tool-input-available":
      case "tool-input-error": {
        const c = toolCard(box, part.toolName, part.toolCallId);
        setInput(c, part.input);
        if (part.type === "tool-input-error") setOutput(c, part.errorText, true);
        break;
      }
      case "tool-approval-request": { const c = findCard(box, part.toolCallId); if (c) waiting(c); break; }
      case "tool-output-available": { const c = findCard(box, part.toolCallId); if (c) setOutput(c, part.output, false); break; }
      case "tool-output-error": { const c = findCard(box, part.toolCallId); if (c) setOutput(c, part.errorText, true); break; }
      case "tool-output-denied": { const c = findCard(box, part.toolCallId); if (c) setOutput(c, "The call was denied.", true, "Denied"); break; }
      case "data-approval": approvalCards(box, part.data); break;
      case "data-notification": setNotification(box, part); break;
      case "data-tripwire": tripwireNote(box, part.data, state.step); state.step = []; break;
      case "data-error":
        state.failed = failure(box, (part.data && part.data.message) || "The answer failed.", part.data && part.data.detail);
        break;
      case "error": if (!state.failed) state.failed = failure(box, part.errorText || "The answer failed."); break;
      case "abort": stoppedNote(box); break;
    }
    scroll();
  }

  function send(text) {
    const box = messageBox("user");
    box.append(el("div", "text plain", text));
    const w = document.getElementById("welcome");
    if (w) w.remove();
    return stream(api("chat"), { id: thread, messages: [{ id: "m" + Date.now(), role: "user", parts: [{ type: "text", text: text }] }] }, null, { user: box });
  }

  // stream posts body to url (or GETs url when body is null) and renders
  // the streamed answer into box, or a new assistant box. It resolves to
  // whether the server took the request. opts.user is the user message
  // the request sends; opts.done runs once the answer ended well.
  async function stream(url, body, box, opts) {
    opts = opts || {};
    const own = new AbortController();
    abort = own;
    box = box || messageBox("assistant");
    box.dataset.done = "false";
    const state = { parts: {}, step: [], user: opts.user || null };
    let took = false;
    sendBtn.disabled = true; stopBtn.disabled = false;
    try {
      const r = await request(url, body === null ? { signal: own.signal } : {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
        signal: own.signal,
      });
      if (r.status === 204) return true;
      if (!r.ok) { await refusal(box, r); return false; }
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const event = buf.slice(0, i); buf = buf.slice(i + 2);
          for (const line of event.split("\n")) {
            if (!line.startsWith("data: ")) continue;
            const data = line.slice(6);
            if (data === "[DONE]") continue;
            let part;
            try { part = JSON.parse(data); } catch (_) { continue; }
            // A resumed stream rebuilds a message shown already: it
            // takes that message's place.
            if (part.type === "start" && part.messageId && body === null) {
              for (const old of log.querySelectorAll(".msg.assistant")) {
                if (old !== box && old.dataset.messageId === part.messageId) old.remove();
              }
              showTotal();
            }
            try { apply(box, part, state); } catch (err) {
              if (!state.unshown) state.unshown = failure(box, "A part of the answer could not be shown.", String(err));
            }
          }
        }
      }
      took = true;
      return true;
    } catch (e) {
      if (own.switched) return false;
      if (e.name === "AbortError") stoppedNote(box);
      else failure(box, "The connection to the server was lost.", String(e));
      return false;
    } finally {
      if (abort === own) {
        abort = null;
        sendBtn.disabled = false; stopBtn.disabled = true;
      }
      for (const e of Object.values(state.parts)) textNow(e, e.source);
      const line = box.querySelector(":scope > .usage");
      if (line) box.append(line);
      box.dataset.done = "true";
      if (!own.switched) loadThreads();
      if (took && !own.switched && !state.failed) regenerateButton(box);
      if (took && opts.done && !own.switched && !state.failed && !state.unshown) opts.done();
    }
  }

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = input.value.trim();
    if (!text || abort) return;
    input.value = "";
    send(text);
  });
  input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); form.requestSubmit(); }
  });
  stopBtn.addEventListener("click", () => {
    if (thread) request(threadPath(thread, "/cancel"), { method: "POST" });
    else if (abort) abort.abort();
  });
  document.getElementById("new").addEventListener("click", () => switchTo(""));
  window.addEventListener("hashchange", () => { if (location.hash.slice(1) !== thread) switchTo(location.hash.slice(1)); });
  function start() {
    loadInfo();
    loadThreads();
    load();
  }
  start();
})();
