package mcp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

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
// a loop.Event (EventName "mcp_notification"): one for a call made inside
// a loop turn reaches that turn's observers (loop.Notify), and a callback
// can hand it straight to a loop.Emitter.
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

// UIData names n "notification" and gives the fields a page shows, so that
// x/conduit/web streams it (as a DataEvent) without importing this package.
func (n Notification) UIData() (string, any) {
	d := map[string]any{
		"server": n.Server, "tool": n.Tool, "kind": n.Kind,
		"progress": n.Progress, "total": n.Total, "message": n.Message,
	}
	if n.Level != "" {
		d["level"] = n.Level
	}
	return "notification", d
}

// WithNotifications calls fn with each progress report and log message
// the server sends. Progress is asked for on every tool call (the call
// carries a progress token), and logs at level "info" and above once
// connected, when the server offers logging. A report the observers of a
// loop turn received (see Notification) does not reach fn too. Without
// WithNotifications, only calls made inside a loop turn ask for progress. fn runs on the session's
// reading goroutine: it should not block.
func WithNotifications(fn func(ctx context.Context, n Notification)) Option {
	return func(c *config) { c.features.notify = fn }
}

// progressTrack numbers the progress tokens sent with calls and remembers
// the context of each call, so that its notifications reach the observers
// of the loop turn that made it (loop.Notify). A few finished calls stay
// known, because the SDK may deliver a notification after the result of
// the call it belongs to.
type progressTrack struct {
	next     atomic.Int64
	mu       sync.Mutex
	inFlight map[string]context.Context
	recent   [8]trackedCall
	nrecent  int
	last     context.Context
}

type trackedCall struct {
	token string
	ctx   context.Context
}

func (t *progressTrack) start(token string, ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inFlight == nil {
		t.inFlight = map[string]context.Context{}
	}
	t.inFlight[token] = ctx
	t.last = ctx
}

func (t *progressTrack) finish(token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ctx := t.inFlight[token]
	delete(t.inFlight, token)
	t.recent[t.nrecent%len(t.recent)] = trackedCall{token, ctx}
	t.nrecent++
}

// lookup returns the context of the call token was sent with; the empty
// token stands for the call started last, which log messages, carrying
// no token, are credited to.
func (t *progressTrack) lookup(token string) context.Context {
	t.mu.Lock()
	defer t.mu.Unlock()
	if token == "" {
		return t.last
	}
	if ctx, ok := t.inFlight[token]; ok {
		return ctx
	}
	for _, r := range t.recent {
		if r.token == token {
			return r.ctx
		}
	}
	return nil
}

// trackProgress gives a call a progress token when someone will hear its
// notifications: a WithNotifications callback, or the observers of the
// loop turn ctx belongs to. The token carries the tool's name, because the
// SDK may deliver a progress notification after the call it belongs to
// has returned. It also asks for log messages at level "info": revisions
// from 2026-07-28 on take the level from each request's _meta rather than
// from logging/setLevel. The returned func ends the tracking.
func (c *Client) trackProgress(ctx context.Context, params *sdk.CallToolParams) func() {
	f := &c.cfg.features
	if f.notify == nil {
		if _, ok := loop.CurrentTurn(ctx); !ok {
			return func() {}
		}
	}
	tok := fmt.Sprintf("%d/%s", f.track.next.Add(1), params.Name)
	params.SetProgressToken(tok)
	if params.Meta == nil {
		params.Meta = sdk.Meta{}
	}
	params.Meta[sdk.MetaKeyLogLevel] = "info"
	f.track.start(tok, ctx)
	return func() { f.track.finish(tok) }
}

// deliver hands n to the observers of the turn whose call it belongs to
// or, when no turn takes it, to the WithNotifications callback: never to
// both, so a program whose callback and observer print to one place
// prints each report once.
func (c *Client) deliver(ctx context.Context, token string, n Notification) {
	if callCtx := c.cfg.features.track.lookup(token); callCtx != nil && loop.Notify(callCtx, n) {
		return
	}
	if fn := c.cfg.features.notify; fn != nil {
		fn(ctx, n)
	}
}

func (c *Client) onProgress(ctx context.Context, req *sdk.ProgressNotificationClientRequest) {
	p := req.Params
	n := Notification{Server: c.cfg.name, Kind: NotifyProgress, Progress: p.Progress, Total: p.Total, Message: p.Message}
	tok, ok := p.ProgressToken.(string)
	if !ok {
		// Not a token of ours: never credit it to the call started last.
		c.deliver(ctx, "\x00", n)
		return
	}
	_, n.Tool, _ = strings.Cut(tok, "/")
	c.deliver(ctx, tok, n)
}

func (c *Client) onLog(ctx context.Context, req *sdk.LoggingMessageRequest) {
	p := req.Params
	n := Notification{Server: c.cfg.name, Kind: NotifyLog, Level: string(p.Level), Logger: p.Logger, Data: p.Data}
	if s, ok := p.Data.(string); ok {
		n.Message = s
	}
	c.deliver(ctx, "", n)
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
