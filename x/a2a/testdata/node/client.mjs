// Drives a lode A2A server with the A2A JavaScript SDK's client, as a
// JavaScript agent would, and prints one JSON line of what it saw for the
// Go test (x/a2a's TestJavaScriptClient) to check.
//
//   node client.mjs URL TOKEN
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { TaskState, Role } from '@a2a-js/sdk';
import { randomUUID } from 'node:crypto';

const [url, token] = process.argv.slice(2);

function withToken(t) {
  return (input, init = {}) => {
    const headers = new Headers(init.headers || {});
    if (t) headers.set('Authorization', `Bearer ${t}`);
    return fetch(input, { ...init, headers });
  };
}

async function connect(t) {
  const fetchImpl = withToken(t);
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  return factory.createFromUrl(url);
}

function message(parts, task) {
  return {
    messageId: randomUUID(),
    contextId: task ? task.contextId : '',
    taskId: task ? task.id : '',
    role: Role.ROLE_USER,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}
const text = (s) => ({ content: { $case: 'text', value: s }, metadata: undefined, filename: '', mediaType: '' });
const data = (v) => ({ content: { $case: 'data', value: v }, metadata: undefined, filename: '', mediaType: '' });
const request = (m) => ({ tenant: '', message: m, configuration: undefined, metadata: undefined });

function artifactText(task) {
  return (task.artifacts || []).flatMap((a) => a.parts).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
}
const stateName = (s) => TaskState[s];

const out = {};
const client = await connect(token);
const card = await new DefaultAgentCardResolver({ fetchImpl: withToken(token) }).resolve(url);
out.card = { name: card.name, streaming: card.capabilities?.streaming, skills: card.skills.map((s) => s.id) };

// 1. A message and its answer.
let res = await client.sendMessage(request(message([text('what is ticket 7?')])));
out.send = { state: stateName(res.status.state), answer: artifactText(res) };

// 2. Streaming.
const states = [];
let streamed = '';
for await (const ev of client.sendMessageStream(request(message([text('count')])))) {
  const p = ev.payload;
  if (!p) continue;
  if (p.$case === 'task') states.push(stateName(p.value.status.state));
  if (p.$case === 'statusUpdate') states.push(stateName(p.value.status.state));
  if (p.$case === 'artifactUpdate') streamed += p.value.artifact.parts.map((x) => x.content?.value ?? '').join('');
}
out.stream = { states, text: streamed };

// 3. input-required, answered with a data part.
res = await client.sendMessage(request(message([text('delete ticket 7')])));
const waiting = res;
const pending = res.status.message.parts.find((p) => p.content?.$case === 'data').content.value.pending;
out.waiting = { state: stateName(res.status.state), pending: pending.map((c) => c.id) };
res = await client.sendMessage(request(message([data({ decisions: [{ id: pending[0].id, approve: true }] })], waiting)));
out.approved = { state: stateName(res.status.state), answer: artifactText(res) };
try {
  await client.sendMessage(request(message([text('approve')], waiting)));
  out.secondAnswer = 'taken';
} catch (e) {
  out.secondAnswer = String(e.message || e);
}

// 4. Cancel a running task.
let id = '';
for await (const ev of client.sendMessageStream(request(message([text('think forever')])))) {
  if (ev.payload?.$case === 'artifactUpdate') {
    id = ev.payload.value.taskId;
    break;
  }
}
res = await client.cancelTask({ tenant: '', id, metadata: undefined });
out.cancel = stateName(res.status.state);

// 5. No credentials.
try {
  const anon = await connect('');
  await anon.sendMessage(request(message([text('hi')])));
  out.anonymous = 'taken';
} catch (e) {
  out.anonymous = 'refused: ' + String(e.message || e);
}

console.log(JSON.stringify(out));
process.exit(0);
