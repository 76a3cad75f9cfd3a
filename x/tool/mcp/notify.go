package mcp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lodeworks/lode/loop"
)

var _ loop.Event = Notification{}

// Notification kinds.
const (
	// NotifyProgress: a tool call in flight reported how far it got.
	NotifyProgress = "progress"
	// NotifyLog: the server logged a message (notifications/message).
	NotifyLog = "log"
)

// Notification is a progress report or a log message from a server. It is
// a loop.Event (EventName "mcp_notification"), so a callback can hand it
// straight to a loop.Emitter.
type Notification struct {
	// Server is the client's name (WithName); Kind is NotifyProgress or
	// NotifyLog.
	Server, Kind string
	// Tool is, for progress, the tool whose call reported it.
	Tool string
	// Progress and Total (zero when unknown) measure progress.
	Progress, Total float64
	// Message is the progress message, or a log message's data when it
	// is text.
	Message string
	// Level and Logger come with a log message; Data is its payload as
	// the server sent it.
	Level, Logger string
	Data          any
}

// EventName returns "mcp_notification".
func (Notification) EventName() string { return "mcp_notification" }

// WithNotifications calls fn with each progress report and log message
// the server sends. Progress is asked for on every tool call (the call
// carries a progress token), and logs at level "info" and above once
// connected, when the server offers logging. fn runs on the session's
// reading goroutine: it should not block.
func WithNotifications(fn func(ctx context.Context, n Notification)) Option {
	return func(c *config) { c.features.notify = fn }
}

// trackProgress gives a call a progress token when notifications are
// wanted. The token carries the tool's name, because the SDK may deliver
// a progress notification after the call it belongs to has returned. It
// also asks for log messages at level "info": revisions from 2026-07-28
// on take the level from each request's _meta rather than from
// logging/setLevel.
func (c *Client) trackProgress(params *sdk.CallToolParams) {
	f := &c.cfg.features
	if f.notify == nil {
		return
	}
	params.SetProgressToken(fmt.Sprintf("%d/%s", f.track.next.Add(1), params.Name))
	if params.Meta == nil {
		params.Meta = sdk.Meta{}
	}
	params.Meta[sdk.MetaKeyLogLevel] = "info"
}

func (c *Client) onProgress(ctx context.Context, req *sdk.ProgressNotificationClientRequest) {
	p := req.Params
	n := Notification{Server: c.cfg.name, Kind: NotifyProgress, Progress: p.Progress, Total: p.Total, Message: p.Message}
	if tok, ok := p.ProgressToken.(string); ok {
		_, n.Tool, _ = strings.Cut(tok, "/")
	}
	c.cfg.features.notify(ctx, n)
}

func (c *Client) onLog(ctx context.Context, req *sdk.LoggingMessageRequest) {
	p := req.Params
	n := Notification{Server: c.cfg.name, Kind: NotifyLog, Level: string(p.Level), Logger: p.Logger, Data: p.Data}
	if s, ok := p.Data.(string); ok {
		n.Message = s
	}
	c.cfg.features.notify(ctx, n)
}

// afterConnect asks a fresh session for what the features need: log
// messages when notifications are wanted.
func (c *Client) afterConnect(ctx context.Context, cs *sdk.ClientSession) {
	if c.cfg.features.notify == nil {
		return
	}
	if res := cs.InitializeResult(); res == nil || res.Capabilities == nil || res.Capabilities.Logging == nil {
		return
	}
	// Best effort: a server that refuses still sends progress.
	_ = cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "info"})
}
