package tool

import (
	"time"

	"github.com/lodeworks/lode/artifact"
)

// CallTimeout returns how long the handler lets call run: its tool's
// Timeout, else the handler's (WithTimeout, DefaultTimeout). An engine
// that runs each call apart, such as x/temporal's activities, bounds the
// attempt by it, a little past, so that the handler's own timeout result
// is what the model reads.
func (h *Handler) CallTimeout(call artifact.ToolCall) time.Duration {
	if b, found := h.registry.Lookup(call.Name); found && b.Tool.Timeout > 0 {
		return b.Tool.Timeout
	}
	return h.timeout
}
