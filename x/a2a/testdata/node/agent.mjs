// A scripted A2A agent on the A2A JavaScript SDK's express server, for the
// tests of x/a2a. It listens on a loopback port it prints as
// "listening PORT". What it does depends on the task's text:
//   "ask ..."   asks a question back (input-required), then answers the reply;
//   "hang ..."  works until the task is cancelled;
//   otherwise   streams "echo: " and the text in two chunks, and completes.
// Every answer ends with the traceparent and Authorization the request had.
import express from 'express';
import { Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler } from '@a2a-js/sdk/server/express';

const part = (text) => ({ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const message = (ctx, text) => ({
  messageId: `m-${Math.random().toString(36).slice(2)}`, contextId: ctx.contextId, taskId: ctx.taskId,
  role: Role.ROLE_AGENT, parts: [part(text)], metadata: undefined, extensions: [], referenceTaskIds: [],
});
const status = (ctx, state, msg) => AgentEvent.statusUpdate({
  taskId: ctx.taskId, contextId: ctx.contextId, status: { state, message: msg, timestamp: undefined }, metadata: undefined,
});
const textOf = (m) => (m?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

let lastHeaders = {};
const hanging = new Map();

const executor = {
  async execute(ctx, bus) {
    const text = textOf(ctx.userMessage);
    const seen = ` [traceparent=${lastHeaders.traceparent ?? ''} authorization=${lastHeaders.authorization ?? ''}]`;
    if (!ctx.task) {
      bus.publish(AgentEvent.task({
        id: ctx.taskId, contextId: ctx.contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined },
        artifacts: [], history: [ctx.userMessage], metadata: undefined,
      }));
    } else {
      bus.publish(AgentEvent.task(ctx.task));
    }
    if (ctx.task && ctx.task.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
      bus.publish(status(ctx, TaskState.TASK_STATE_COMPLETED, message(ctx, `Sunny in ${text}.` + seen)));
      bus.finished();
      return;
    }
    if (text.startsWith('ask')) {
      bus.publish(status(ctx, TaskState.TASK_STATE_INPUT_REQUIRED, message(ctx, 'Which city?')));
      bus.finished();
      return;
    }
    bus.publish(status(ctx, TaskState.TASK_STATE_WORKING, undefined));
    if (text.startsWith('hang')) {
      await new Promise((resolve) => hanging.set(ctx.taskId, resolve));
      bus.publish(status(ctx, TaskState.TASK_STATE_CANCELED, message(ctx, 'cancelled as asked')));
      bus.finished();
      return;
    }
    const artifactId = 'a1';
    bus.publish(AgentEvent.artifactUpdate({
      taskId: ctx.taskId, contextId: ctx.contextId, append: false, lastChunk: false, metadata: undefined,
      artifact: { artifactId, name: 'answer', description: '', parts: [part('echo: ')], metadata: undefined, extensions: [] },
    }));
    bus.publish(AgentEvent.artifactUpdate({
      taskId: ctx.taskId, contextId: ctx.contextId, append: true, lastChunk: true, metadata: undefined,
      artifact: { artifactId, name: 'answer', description: '', parts: [part(text + seen)], metadata: undefined, extensions: [] },
    }));
    bus.publish(status(ctx, TaskState.TASK_STATE_COMPLETED, undefined));
    bus.finished();
  },
  async cancelTask(taskId) {
    process.stdout.write(`cancel ${taskId}\n`);
    hanging.get(taskId)?.();
  },
};

const app = express();
const server = app.listen(0, '127.0.0.1', () => {
  const port = server.address().port;
  const card = {
    name: 'JS Weather',
    description: 'A scripted agent on the A2A JavaScript SDK.',
    version: '1.0.0',
    supportedInterfaces: [{ url: `http://127.0.0.1:${port}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }],
    capabilities: { streaming: process.env.A2A_STREAMING !== 'off', pushNotifications: false, extensions: [], extendedAgentCard: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'weather', name: 'Weather', description: 'Tells the weather.', tags: ['weather'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    securitySchemes: {}, securityRequirements: [], signatures: [], documentationUrl: undefined, iconUrl: undefined, provider: undefined,
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use((req, _res, next) => {
    if (req.path === '/rpc') lastHeaders = { traceparent: req.header('traceparent'), authorization: req.header('authorization') };
    next();
  });
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/rpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  process.stdout.write(`listening ${port}\n`);
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
