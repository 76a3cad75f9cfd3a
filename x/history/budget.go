package history

import (
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/catalog"
)

// Windower is what a provider implements when it knows its models' context
// windows; New asks it (found by type assertion on the value given to
// WithWindower) before the built-in table.
type Windower interface {
	ContextWindow(model string) (tokens int, ok bool)
}

// DefaultReserve is the room, in tokens, left for the answer when the
// budget comes from a context window.
const DefaultReserve = 4096

// localWindows are the context windows of open-weight model families as
// local servers (Ollama, llama.cpp, vLLM) name them, which the catalog's
// sources do not list: matched by the longest prefix of the name, after
// the catalog.
var localWindows = map[string]int{
	"llama3.1": 131072,
	"llama3.2": 131072,
	"llama3.3": 131072,
	"llama3":   8192,
	"qwen2.5":  32768,
	"qwen3":    40960,
	"mistral":  32768,
}

// ContextWindow returns the context window of model from x/catalog's
// Default catalog (exact names first, then its sources' name rules, with
// or without a "vendor/" part), or else by the longest prefix of a local
// model family's name.
func ContextWindow(model string) (int, bool) {
	if n, ok := catalog.Default().ContextWindow(model); ok {
		return n, true
	}
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	best, n := "", 0
	for prefix, w := range localWindows {
		if strings.HasPrefix(model, prefix) && len(prefix) > len(best) {
			best, n = prefix, w
		}
	}
	return n, best != ""
}

// Token counting is an estimate: one token per four bytes of what a turn
// says, plus a few for the turn itself. No tokenizer is linked in: each
// model family has its own, and the estimate is corrected by what the
// server reports (see Policy) and backed by the context-length retry.
const (
	bytesPerToken = 4
	turnOverhead  = 4
	imageTokens   = 800
)

func estimateTurn(t ledger.Turn) int {
	n := 0
	for _, a := range t.Artifacts {
		switch a := a.(type) {
		case artifact.Text:
			n += len(a.Content)
		case artifact.Reasoning:
			n += len(a.Content)
		case artifact.ToolCall:
			n += len(a.Name) + len(a.Arguments) + len(a.ID)
		case artifact.ToolResult:
			n += len(a.Content)
			for _, p := range a.Parts {
				n += partBytes(p)
			}
		case artifact.Summary:
			n += len(a.Content)
		case artifact.Opaque:
			// Its adapter sends it back whole (a server tool's search
			// results); another adapter sends none of it, so this errs high.
			n += len(a.Data)
		default:
			n += partBytes(a)
		}
	}
	return turnOverhead + (n+bytesPerToken-1)/bytesPerToken
}

func partBytes(a artifact.Artifact) int {
	switch a := a.(type) {
	case artifact.Text:
		return len(a.Content)
	case artifact.Image:
		return imageTokens * bytesPerToken
	case artifact.Resource:
		return len(a.Text)
	case artifact.ResourceLink:
		return len(a.URI) + len(a.Description)
	}
	return 0
}

// Estimate returns the estimated tokens of turns, as the policy counts them.
func Estimate(turns []ledger.Turn) int {
	n := 0
	for _, t := range turns {
		n += estimateTurn(t)
	}
	return n
}

// reported returns the tokens the server counted for the request that
// produced the assistant turn t and for its answer; false when t carries
// no Usage. That is the turn's last Usage: an answer may carry the usage
// of attempts that failed or lost before it (x/provider/fallback), each
// of the same request, which a sum would count twice.
func reported(t ledger.Turn) (int, bool) {
	for i := len(t.Artifacts) - 1; i >= 0; i-- {
		if u, isUsage := t.Artifacts[i].(artifact.Usage); isUsage {
			return int(u.InputTokens + u.OutputTokens), true
		}
	}
	return 0, false
}
