// The AI SDK's own chat server, as its guides write one: streamText over
// an OpenAI-compatible model, the conversation's messages from the
// client's request, the answer as a UI message stream
// (toUIMessageStreamResponse). bench/load runs it beside lode web against
// the same fake model, with the same tool (calculator__eval).
//
//   PORT=0 MODEL_URL=http://127.0.0.1:PORT/v1 node server.mjs
//
// It prints "listening PORT" once it accepts requests.
import http from 'node:http';
import { Readable } from 'node:stream';
import { streamText, convertToModelMessages, stepCountIs, tool } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { z } from 'zod';

const model = createOpenAICompatible({
  name: 'fake',
  baseURL: process.env.MODEL_URL,
  apiKey: 'fake',
  includeUsage: true,
})('fake');

// calculator__eval does what lode's calculator pack does for the
// expressions the fake model sends: a sum of integers.
const tools = {
  calculator__eval: tool({
    description: 'Evaluate an arithmetic expression',
    inputSchema: z.object({ expression: z.string().describe('The arithmetic expression to evaluate') }),
    execute: async ({ expression }) => {
      const sum = expression.split('+').reduce((a, t) => a + Number(t.trim()), 0);
      return { expression, result: String(sum), decimal: String(sum), exact: true };
    },
  }),
};

async function chat(req, res) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const result = streamText({
    model,
    messages: await convertToModelMessages(body.messages),
    tools,
    stopWhen: stepCountIs(5),
  });
  const response = result.toUIMessageStreamResponse();
  res.writeHead(response.status, Object.fromEntries(response.headers));
  Readable.fromWeb(response.body).pipe(res);
}

const server = http.createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/api/chat') {
    chat(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err));
    });
    return;
  }
  res.writeHead(req.url === '/health' ? 200 : 404);
  res.end();
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT || 0), '127.0.0.1', () => {
  console.log('listening ' + server.address().port);
});
