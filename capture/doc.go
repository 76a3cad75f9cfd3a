// Package capture says whether lode's OpenTelemetry spans carry the
// conversation's content, and writes that content in the structured form
// of the OpenTelemetry GenAI conventions (gen_ai.input.messages,
// gen_ai.output.messages, gen_ai.system_instructions,
// gen_ai.tool.call.arguments, gen_ai.tool.call.result).
//
// Content holds users' data, so capture is off unless a Config in the
// context turns it on: the loop's WithCapture option puts one there for
// each turn, and every adapter's "chat" span and x/tool's "execute_tool"
// span read the same one. Nothing here reads the environment on its own:
// a door (the lode CLI, a server) calls FromEnv and passes the result on.
package capture
