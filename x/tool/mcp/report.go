package mcp

import (
	"context"
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// reporter forwards what a served tool reports (xtool.Progress, xtool.Log)
// to the client that called it: progress as notifications/progress, when
// the call carried a progress token to report against, and logs as
// notifications/message, which the go-sdk sends only at or above the level
// the client set with logging/setLevel. A notification that cannot be sent
// (the client went away) is dropped; the call goes on.
type reporter struct{ req *sdk.CallToolRequest }

func (r reporter) Progress(ctx context.Context, done, total float64, message string) {
	if r.req.Params == nil || r.req.Session == nil {
		return
	}
	token := r.req.Params.GetProgressToken()
	if token == nil {
		return
	}
	_ = r.req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
		ProgressToken: token, Progress: done, Total: total, Message: message,
	})
}

func (r reporter) Log(ctx context.Context, level slog.Level, message string) {
	if r.req.Session == nil {
		return
	}
	name := ""
	if r.req.Params != nil {
		name = r.req.Params.Name
	}
	_ = r.req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: mcpLevel(level), Logger: name, Data: message})
}

// mcpLevel maps a slog level onto MCP's syslog levels.
func mcpLevel(l slog.Level) sdk.LoggingLevel {
	switch {
	case l < slog.LevelInfo:
		return "debug"
	case l < slog.LevelWarn:
		return "info"
	case l < slog.LevelError:
		return "warning"
	case l < slog.LevelError+4:
		return "error"
	case l < slog.LevelError+8:
		return "critical"
	case l < slog.LevelError+12:
		return "alert"
	}
	return "emergency"
}
