// Command lode runs an agent on any OpenAI-compatible endpoint (or
// Anthropic's, or Gemini's), serves packs over MCP, serves a chat page,
// recovers runs whose process died, lists the tools a configuration mounts,
// and plays an offline demo that needs no model and no key. Run "lode help"
// for its commands; package x/cli documents them.
package main

import "github.com/lodeworks/lode/x/cli"

func main() { cli.Main() }
