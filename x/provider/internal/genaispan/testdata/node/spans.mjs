// Has OpenLLMetry's instrumentations of the openai and Anthropic clients
// record one tool-using conversation with each and prints the spans they
// made as JSON: [{name, attributes}]. argv[2] is a JSON object naming the
// fake servers' base URLs (openai, anthropic) and the conversation's
// system prompt, user prompt and tool result.
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { OpenAIInstrumentation } from "@traceloop/instrumentation-openai";
import { AnthropicInstrumentation } from "@traceloop/instrumentation-anthropic";
import OpenAI from "openai";
import * as anthropicSDK from "@anthropic-ai/sdk";

const { openai: openaiURL, anthropic: anthropicURL, system, prompt, result } = JSON.parse(process.argv[2]);
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

const oi = new OpenAIInstrumentation({ traceContent: true });
oi.setTracerProvider(provider);
oi.manuallyInstrument(OpenAI);
const ai = new AnthropicInstrumentation({ traceContent: true });
ai.setTracerProvider(provider);
ai.manuallyInstrument(anthropicSDK);

const openai = new OpenAI({ apiKey: "test-key", baseURL: openaiURL, maxRetries: 0 });
const tools = [{ type: "function", function: { name: "lookup", description: "Look a plan up",
	parameters: { type: "object", properties: { q: { type: "string" } } } } }];
const messages = [{ role: "system", content: system }, { role: "user", content: prompt }];
// Streamed: the instrumentation assembles the answer from the chunks.
const stream = await openai.chat.completions.create({ model: "gpt-test", messages, tools, stream: true });
for await (const _ of stream) { /* read to the end */ }
messages.push({ role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function",
	function: { name: "lookup", arguments: '{"q":"plan"}' } }] });
messages.push({ role: "tool", tool_call_id: "call_1", content: result });
await openai.chat.completions.create({ model: "gpt-test", messages, tools });

const anthropic = new anthropicSDK.Anthropic({ apiKey: "test-key", baseURL: anthropicURL, maxRetries: 0 });
const atools = [{ name: "lookup", description: "Look a plan up",
	input_schema: { type: "object", properties: { q: { type: "string" } } } }];
const amessages = [{ role: "user", content: prompt }];
await anthropic.messages.create({ model: "claude-test", max_tokens: 100, system, messages: amessages, tools: atools });
amessages.push({ role: "assistant", content: [{ type: "tool_use", id: "call_1", name: "lookup", input: { q: "plan" } }] });
amessages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: "call_1", content: result }] });
await anthropic.messages.create({ model: "claude-test", max_tokens: 100, system, messages: amessages, tools: atools });

await provider.forceFlush();
const spans = exporter.getFinishedSpans().map((s) => ({ name: s.name, attributes: s.attributes }));
process.stdout.write(JSON.stringify(spans));
