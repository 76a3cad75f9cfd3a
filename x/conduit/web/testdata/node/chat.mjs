// Drives the AI SDK's own Chat (AbstractChat with DefaultChatTransport, as
// useChat builds it) against lode's chat endpoint, one step per command.
// Usage: node chat.mjs VERSION API CHAT_ID   (VERSION 6 or 7: packages ai6, ai)
// Reads one JSON command a line on stdin and answers each with one JSON
// line on stdout: {"status", "error", "messages"} once the step is done.
//
//	{"op": "send", "text": T}              sendMessage, until its answer ends
//	{"op": "send", "text": T, "until": "text"}  until the answer shows text
//	{"op": "edit", "id": ID, "text": T}   sendMessage in place of user message ID
//	{"op": "approve", "id": ID, "approved": B, "reason": R}
//	                                       addToolApprovalResponse; the
//	                                       Chat sends it by itself
//	                                       (sendAutomaticallyWhen), until that
//	                                       request ends
//	{"op": "regenerate"}                   regenerate(), until it ends
//	{"op": "stop"}                         stop() and POST .../cancel, as an
//	                                       app stops a turn on the server
//	{"op": "reload"}                       drop this Chat mid-stream, as a
//	                                       reload does, and make a new one
//	                                       from GET /api/threads/{id}
//	{"op": "switch", "branch": ID}        POST /api/threads/{id}/branch, and
//	                                       make a new Chat from the branch
//	                                       it answers with, as reload does
//	{"op": "resume", "until": "text"}      resumeStream(), until it shows text
//	{"op": "wait"}                         until the step under way ends
import * as ai7 from "ai";
import * as ai6 from "ai6";
import { createInterface } from "node:readline";

const [version, api, chatId] = process.argv.slice(2);
const ai = version === "6" ? ai6 : ai7;
const base = api.replace(/\/api\/chat$/, "");
const errors = [];

// State is the ChatState a framework binding (React's, Vue's) provides:
// here it tells waiters when the messages or the status change.
class State {
  constructor(messages) {
    this.messages = messages;
    this._status = "ready";
    this.error = undefined;
    this.waiters = [];
  }
  get status() {
    return this._status;
  }
  set status(s) {
    this._status = s;
    this.changed();
  }
  pushMessage(m) {
    this.messages = this.messages.concat(m);
    this.changed();
  }
  popMessage() {
    this.messages = this.messages.slice(0, -1);
    this.changed();
  }
  replaceMessage(i, m) {
    this.messages = [...this.messages.slice(0, i), this.snapshot(m), ...this.messages.slice(i + 1)];
    this.changed();
  }
  snapshot(v) {
    return structuredClone(v);
  }
  changed() {
    this.waiters = this.waiters.filter((w) => !w());
  }
  // until resolves once cond holds; a step that never gets there fails
  // the test with what the Chat holds instead of hanging it.
  until(cond, what) {
    return new Promise((resolve, reject) => {
      if (cond()) return resolve();
      const timer = setTimeout(() => reject(new Error(`chat.mjs: no ${what} after 60s: ${JSON.stringify(this.messages)}`)), 60000);
      this.waiters.push(() => {
        if (!cond()) return false;
        clearTimeout(timer);
        resolve();
        return true;
      });
    });
  }
}

class Chat extends ai.AbstractChat {}

function newChat(messages) {
  const state = new State(messages);
  const chat = new Chat({
    id: chatId,
    state,
    transport: new ai.DefaultChatTransport({ api }),
    sendAutomaticallyWhen: ai.lastAssistantMessageIsCompleteWithApprovalResponses,
    onError: (e) => errors.push(String(e)),
  });
  return { chat, state };
}

let { chat, state } = newChat([]);
let running = Promise.resolve();

// showsText: the answer under way shows text (the status tells it from
// the answer before, which the Chat holds until the new one starts).
const showsText = () => {
  const m = state.messages.at(-1);
  return state.status === "streaming" && m?.role === "assistant" && m.parts.some((p) => p.type === "text" && p.text.length > 0);
};

// settled waits for the request a step started by itself to end.
async function settled() {
  await state.until(() => state.status === "submitted" || state.status === "streaming", "request");
  await state.until(() => state.status === "ready" || state.status === "error", "end of the request");
}

async function step(cmd) {
  switch (cmd.op) {
    case "send":
      running = chat.sendMessage({ text: cmd.text }).catch((e) => errors.push(String(e)));
      if (cmd.until === "text") return state.until(showsText, "text");
      return running;
    case "edit":
      return chat.sendMessage({ text: cmd.text, messageId: cmd.id });
    case "approve": {
      const done = settled();
      await chat.addToolApprovalResponse({ id: cmd.id, approved: cmd.approved, reason: cmd.reason });
      return done;
    }
    case "regenerate":
      return chat.regenerate();
    case "stop": {
      await chat.stop();
      const r = await fetch(`${base}/api/threads/${chatId}/cancel`, { method: "POST" });
      if (r.status !== 204) throw new Error(`chat.mjs: cancel answered ${r.status}`);
      return running;
    }
    case "reload": {
      await chat.stop();
      await running;
      const r = await fetch(`${base}/api/threads/${chatId}`);
      if (!r.ok) throw new Error(`chat.mjs: GET thread answered ${r.status}`);
      ({ chat, state } = newChat((await r.json()).messages));
      running = Promise.resolve();
      return;
    }
    case "switch": {
      await running;
      const r = await fetch(`${base}/api/threads/${chatId}/branch`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ branch: cmd.branch }),
      });
      if (!r.ok) throw new Error(`chat.mjs: switch answered ${r.status}: ${await r.text()}`);
      ({ chat, state } = newChat((await r.json()).messages));
      running = Promise.resolve();
      return;
    }
    case "resume":
      running = chat.resumeStream().catch((e) => errors.push(String(e)));
      if (cmd.until === "text") return state.until(showsText, "text");
      return running;
    case "wait":
      return running;
  }
  throw new Error(`chat.mjs: unknown op ${cmd.op}`);
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  try {
    await step(JSON.parse(line));
  } catch (e) {
    errors.push(String(e && e.stack ? e.stack : e));
  }
  process.stdout.write(JSON.stringify({ status: state.status, error: chat.error ? String(chat.error) : "", errors: errors.splice(0), messages: state.messages }) + "\n");
}
