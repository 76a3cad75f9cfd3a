// Sends one message to lode's chat endpoint the way useChat does (the AI
// SDK's DefaultChatTransport), reads the answer with the SDK's own parser
// and message builder, and prints what it got as one JSON object:
// {"types": [...part types...], "message": UIMessage, "errors": [...]}.
// Usage: node read.mjs URL CHAT_ID TEXT   (an empty CHAT_ID starts a thread)
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [url, chatId, text] = process.argv.slice(2);
const transport = new DefaultChatTransport({ api: url });
const out = { types: [], message: null, errors: [] };
try {
  const chunks = await transport.sendMessages({
    chatId,
    trigger: "submit-message",
    messageId: undefined,
    messages: [{ id: "u1", role: "user", parts: [{ type: "text", text }] }],
    abortSignal: undefined,
  });
  const [mine, sdks] = chunks.tee();
  const seen = (async () => {
    for await (const c of mine) out.types.push(c.type);
  })();
  for await (const m of readUIMessageStream({ stream: sdks, onError: (e) => out.errors.push(String(e)) })) {
    out.message = m;
  }
  await seen;
} catch (e) {
  out.errors.push(String(e && e.stack ? e.stack : e));
}
process.stdout.write(JSON.stringify(out));
