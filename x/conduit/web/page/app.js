// The chat page: it speaks the AI SDK's UI message stream that the
// handler serves at api/chat, with no library and no build step.
"use strict";
(function () {
  const log = document.getElementById("log");
  const form = document.getElementById("form");
  const input = document.getElementById("input");
  const sendBtn = document.getElementById("send");
  const stopBtn = document.getElementById("stop");
  let thread = location.hash.slice(1);
  let abort = null;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function scroll() { log.scrollTop = log.scrollHeight; }
  function show(v) { return typeof v === "string" ? v : JSON.stringify(v, null, 2); }

  // A tool card: the call and its input, then its result or error.
  function toolCard(box, name, id) {
    const d = el("details", "tool");
    d.dataset.toolCallId = id;
    const s = el("summary", "", name + " …");
    d.append(s, el("pre", "input"), el("pre", "output"));
    box.append(d);
    return d;
  }
  function setInput(card, v) { card.querySelector(".input").textContent = show(v); }
  function setOutput(card, v, failed) {
    const name = card.querySelector("summary").textContent.replace(/ …$/, "");
    card.querySelector("summary").textContent = name + (failed ? " ✗" : " ✓");
    card.querySelector(".output").textContent = show(v);
    if (failed) card.classList.add("failed");
    if (card.notification) { card.notification.remove(); card.notification = null; }
  }
  // setNotification shows the latest progress or log line of a running
  // call under its card; the call's result replaces it.
  function setNotification(box, part, state) {
    let card = part.id && state.tools[part.id];
    if (!card) {
      const running = Object.values(state.tools).filter(c => / …$/.test(c.querySelector("summary").textContent));
      card = running[running.length - 1];
    }
    if (!card || !/ …$/.test(card.querySelector("summary").textContent)) return;
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

  // An approval card per call that waits for a person: Approve and Deny
  // post the decision and stream the continued turn below.
  function approvalCards(box, data) {
    for (const c of data.calls || []) {
      const d = el("div", "approval");
      d.dataset.toolCallId = c.toolCallId;
      d.append(el("div", "", "Run " + c.toolName + "?" + (c.reason ? " (" + c.reason + ")" : "")), el("pre", "input", show(c.input)));
      const yes = el("button", "approve", "Approve"), no = el("button", "deny", "Deny");
      yes.type = no.type = "button";
      const decide = (approve) => {
        if (abort) return;
        yes.disabled = no.disabled = true;
        d.classList.add(approve ? "approved" : "denied");
        stream("api/threads/" + encodeURIComponent(data.threadId || thread) + "/decide", { decisions: [{ id: c.toolCallId, approve: approve }] });
      };
      yes.addEventListener("click", () => decide(true));
      no.addEventListener("click", () => decide(false));
      d.append(yes, no);
      box.append(d);
    }
  }

  function renderMessage(m) {
    const box = el("div", "msg " + m.role);
    for (const p of m.parts || []) {
      if (p.type === "text") box.append(el("span", "text", p.text));
      else if (p.type === "reasoning") box.append(el("div", "reasoning", p.text));
      else if (p.type.startsWith("tool-")) {
        const c = toolCard(box, p.type.slice(5), p.toolCallId);
        setInput(c, p.input);
        if (p.state === "output-available") setOutput(c, p.output, false);
        if (p.state === "output-error") setOutput(c, p.errorText, true);
      } else if (p.type === "data-approval") approvalCards(box, p.data);
    }
    log.append(box);
  }

  async function load() {
    log.textContent = "";
    if (!thread) return;
    const r = await fetch("api/threads/" + encodeURIComponent(thread));
    if (!r.ok) { log.append(el("div", "msg error", (await r.text()).trim())); return; }
    const t = await r.json();
    t.messages.forEach(renderMessage);
    if (t.running) log.append(el("div", "note", "A turn is still running; reload to see it."));
    scroll();
  }

  // apply renders one stream part into the assistant box.
  function apply(box, part, state) {
    switch (part.type) {
      case "start":
        if (part.messageMetadata && part.messageMetadata.threadId && !thread) {
          thread = part.messageMetadata.threadId;
          history.replaceState(null, "", "#" + thread);
        }
        break;
      case "text-start": state.parts[part.id] = box.appendChild(el("span", "text", "")); break;
      case "text-delta": state.parts[part.id].textContent += part.delta; break;
      case "reasoning-start": state.parts[part.id] = box.appendChild(el("div", "reasoning", "")); break;
      case "reasoning-delta": state.parts[part.id].textContent += part.delta; break;
      case "tool-input-start": state.tools[part.toolCallId] = toolCard(box, part.toolName, part.toolCallId); break;
      case "tool-input-delta":
        state.tools[part.toolCallId].querySelector(".input").textContent += part.inputTextDelta; break;
      case "tool-input-available":
      case "tool-input-error": {
        const c = state.tools[part.toolCallId] || (state.tools[part.toolCallId] = toolCard(box, part.toolName, part.toolCallId));
        setInput(c, part.input);
        if (part.type === "tool-input-error") setOutput(c, part.errorText, true);
        break;
      }
      case "tool-output-available": if (state.tools[part.toolCallId]) setOutput(state.tools[part.toolCallId], part.output, false); break;
      case "tool-output-error": if (state.tools[part.toolCallId]) setOutput(state.tools[part.toolCallId], part.errorText, true); break;
      case "data-approval": approvalCards(box, part.data); break;
      case "data-notification": setNotification(box, part, state); break;
      case "error": box.append(el("div", "error", part.errorText)); break;
      case "abort": box.append(el("div", "note", "Stopped.")); break;
    }
    scroll();
  }

  function send(text) {
    renderMessage({ role: "user", parts: [{ type: "text", text: text }] });
    return stream("api/chat", { id: thread, messages: [{ id: "m" + Date.now(), role: "user", parts: [{ type: "text", text: text }] }] });
  }

  // stream posts body to url and renders the streamed answer in a new
  // assistant box.
  async function stream(url, body) {
    const box = el("div", "msg assistant");
    log.append(box);
    const state = { parts: {}, tools: {} };
    abort = new AbortController();
    sendBtn.disabled = true; stopBtn.disabled = false;
    try {
      const r = await fetch(url, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
        signal: abort.signal,
      });
      if (!r.ok) { box.append(el("div", "error", (await r.text()).trim())); return; }
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
            apply(box, JSON.parse(data), state);
          }
        }
      }
    } catch (e) {
      if (e.name !== "AbortError") box.append(el("div", "error", String(e)));
      else box.append(el("div", "note", "Stopped."));
    } finally {
      abort = null;
      sendBtn.disabled = false; stopBtn.disabled = true;
      box.dataset.done = "true";
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
    if (thread) fetch("api/threads/" + encodeURIComponent(thread) + "/cancel", { method: "POST" });
    else if (abort) abort.abort();
  });
  document.getElementById("new").addEventListener("click", () => {
    thread = ""; history.replaceState(null, "", location.pathname); log.textContent = "";
  });
  load();
})();
