package gemini

import "strings"

// ContextWindow reports the context window in tokens of known Gemini
// models: 1,048,576 for Gemini 1.5 Flash, 2.x and 3.x, 2,097,152 for
// Gemini 1.5 Pro. It reports false for a model it does not know.
func ContextWindow(model string) (tokens int, ok bool) {
	m := strings.TrimPrefix(strings.ToLower(model), "models/")
	if i := strings.LastIndex(m, "/models/"); i >= 0 {
		m = m[i+len("/models/"):]
	}
	switch {
	case strings.HasPrefix(m, "gemini-1.5-pro"):
		return 2_097_152, true
	case strings.HasPrefix(m, "gemini-1.5-flash"), strings.HasPrefix(m, "gemini-2."), strings.HasPrefix(m, "gemini-3"):
		return 1_048_576, true
	}
	return 0, false
}
