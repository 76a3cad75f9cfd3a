package anthropic

import "strings"

// contextWindows maps model-name prefixes to their context window. Every
// Claude 3.x and 4.x model takes 200,000 tokens; Sonnet 4 and later
// Sonnets take 1,000,000 with the anthropic-beta header
// "context-1m-2025-08-07" (WithHeader), which this table does not assume.
var contextWindows = []struct {
	prefix string
	tokens int
}{
	{"claude-opus-4", 200_000},
	{"claude-sonnet-4", 200_000},
	{"claude-haiku-4", 200_000},
	{"claude-4", 200_000},
	{"claude-3-7-sonnet", 200_000},
	{"claude-3-5-sonnet", 200_000},
	{"claude-3-5-haiku", 200_000},
	{"claude-3-opus", 200_000},
	{"claude-3-sonnet", 200_000},
	{"claude-3-haiku", 200_000},
}

// ContextWindow reports the context window in tokens of a known model
// family, for history policies; ok is false for a model it does not know.
// A 1M-token window needs the beta header and is not reported.
func ContextWindow(model string) (tokens int, ok bool) {
	m := strings.ToLower(strings.TrimSpace(model))
	// Gateways prefix a vendor ("anthropic/claude-...", "anthropic.claude-...").
	if i := strings.LastIndexAny(m, "/."); i >= 0 && strings.HasPrefix(m[i+1:], "claude") {
		m = m[i+1:]
	}
	for _, w := range contextWindows {
		if strings.HasPrefix(m, w.prefix) {
			return w.tokens, true
		}
	}
	return 0, false
}
