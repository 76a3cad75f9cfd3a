package tool

import (
	"context"
	"log/slog"
)

// Reporter receives what a running tool says about its own work: how far
// it has got and what it is doing. Whoever runs the tool supplies one with
// WithReporter — lode's MCP server forwards both to the MCP client. A
// Reporter is called from the tool's goroutine, possibly from several
// calls at once.
type Reporter interface {
	Progress(ctx context.Context, done, total float64, message string)
	Log(ctx context.Context, level slog.Level, message string)
}

type reporterKey struct{}

// WithReporter returns ctx in which Progress and Log reach r; a nil r
// reaches no one.
func WithReporter(ctx context.Context, r Reporter) context.Context {
	return context.WithValue(ctx, reporterKey{}, r)
}

// Progress reports from inside a running tool that done units of total are
// finished (total 0 when the tool cannot tell), with an optional message.
// done should grow from one report to the next. With no Reporter in ctx —
// a tool run by a loop, or in a test — it does nothing, so a long tool may
// report freely.
func Progress(ctx context.Context, done, total float64, message string) {
	if r, ok := ctx.Value(reporterKey{}).(Reporter); ok && r != nil {
		r.Progress(ctx, done, total, message)
	}
}

// Log reports a message about a running tool's work at level, to whoever
// runs it (an MCP client sees it as a log message at the level it asked
// for); with no Reporter in ctx it does nothing. What the model should read
// belongs in the tool's result instead.
func Log(ctx context.Context, level slog.Level, message string) {
	if r, ok := ctx.Value(reporterKey{}).(Reporter); ok && r != nil {
		r.Log(ctx, level, message)
	}
}
