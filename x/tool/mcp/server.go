package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/internal/runspan"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

// Version is the version lode's MCP client and server report in the
// handshake.
const Version = "0.1.0"

// DefaultMaxBodyBytes bounds one incoming message — the body of an HTTP
// request, a line on stdio — unless WithMaxBodyBytes says otherwise.
const DefaultMaxBodyBytes = 4 << 20

// IdentifyFunc tells who sent an HTTP request, as the ledger.State the
// server's ToolFilter sees for it — typically a thread whose metadata holds
// the caller's role or tenant, found from a bearer token. An error refuses
// the request with 401 Unauthorized.
type IdentifyFunc func(r *http.Request) (ledger.State, error)

// ServerOption configures a Server.
type ServerOption func(*serverConfig)

type serverConfig struct {
	name, version string
	handler       *xtool.Handler
	filter        xtool.ToolFilter
	identify      IdentifyFunc
	state         ledger.State
	hosts         []string
	origins       []string
	maxBody       int64
	tracer        trace.Tracer
	sdkOpts       sdk.ServerOptions
	stateless     bool
	errs          []error
}

func (c *serverConfig) fail(format string, a ...any) {
	c.errs = append(c.errs, fmt.Errorf("%w: "+format, append([]any{ErrOption}, a...)...))
}

// WithImplementation sets the name and version the server reports in the
// handshake (default "lode" and Version).
func WithImplementation(name, version string) ServerOption {
	return func(c *serverConfig) { c.name, c.version = name, version }
}

// WithHandler runs calls through h — its timeouts, budgets, approver,
// sandboxes, tracer — instead of a default xtool.NewHandler(registry).
// h must run the tools of the registry given to NewServer.
func WithHandler(h *xtool.Handler) ServerOption { return func(c *serverConfig) { c.handler = h } }

// WithFilter selects the tools each caller may see and use, with the
// state of the request (see WithIdentify and WithState). The filter
// decides tools/list, and is applied again to every tools/call, so a
// hidden tool cannot be called by guessing its name; the refusal is
// byte for byte the result for a tool that does not exist, so it cannot be
// found by guessing either.
func WithFilter(f xtool.ToolFilter) ServerOption { return func(c *serverConfig) { c.filter = f } }

// WithIdentify identifies the sender of every HTTP request; its state is
// what WithFilter sees for the request.
func WithIdentify(fn IdentifyFunc) ServerOption { return func(c *serverConfig) { c.identify = fn } }

// WithState sets the state the filter sees for requests that carry no
// HTTP identity: stdio and in-process sessions, and HTTP without
// WithIdentify. The default is an empty thread.
func WithState(st ledger.State) ServerOption { return func(c *serverConfig) { c.state = st } }

// WithAllowedHosts accepts HTTP requests whose Host header names one of
// hosts (with or without a port), besides the loopback names that are
// always accepted (localhost, 127.0.0.0/8, [::1]). Any other Host is
// refused with 403, against DNS rebinding. "*" accepts any host.
func WithAllowedHosts(hosts ...string) ServerOption {
	return func(c *serverConfig) { c.hosts = append(c.hosts, hosts...) }
}

// WithAllowedOrigins accepts browser requests whose Origin header is one of
// origins ("https://app.example.com"), besides loopback origins. A request
// with any other Origin is refused with 403. "*" accepts any origin.
func WithAllowedOrigins(origins ...string) ServerOption {
	return func(c *serverConfig) { c.origins = append(c.origins, origins...) }
}

// WithMaxBodyBytes bounds one incoming message (default
// DefaultMaxBodyBytes): the body of an HTTP request, refused with 413 when
// larger, or a line of ServeStdio and ServeIO, refused with a JSON-RPC
// invalid-request error when longer (it is read to its end, never held
// whole).
func WithMaxBodyBytes(n int64) ServerOption { return func(c *serverConfig) { c.maxBody = n } }

// WithTracer records a span per MCP request ("tools/call {tool}",
// "tools/list", ...) with mcp.method.name, gen_ai.tool.name and
// mcp.session.id. The default handler traces each execution under it.
func WithTracer(t trace.Tracer) ServerOption { return func(c *serverConfig) { c.tracer = t } }

// WithSDKOptions passes options to the go-sdk server: instructions,
// completion and subscription handlers, a logger, keep-alive. Its tool
// capability is always on.
func WithSDKOptions(o *sdk.ServerOptions) ServerOption {
	return func(c *serverConfig) {
		if o != nil {
			c.sdkOpts = *o
		}
	}
}

// WithStateless serves HTTP without sessions: each POST stands alone.
// The server cannot then send requests to the client (sampling,
// elicitation) nor notify it of tool changes.
func WithStateless() ServerOption { return func(c *serverConfig) { c.stateless = true } }

// Server serves a tool.Registry over MCP: stdio (ServeStdio), streamable
// HTTP (ServeHTTP, Serve, ListenAndServe) or any go-sdk transport (Run,
// Connect). Every tools/call runs through an xtool.Handler, so failure is
// data: an unknown tool, bad arguments, the tool's error, a panic or a
// timeout are all results with isError set, never transport errors.
type Server struct {
	reg      tool.Registry
	handler  *xtool.Handler
	filter   xtool.ToolFilter
	identify IdentifyFunc
	state    ledger.State
	tracer   trace.Tracer
	sdk      *sdk.Server
	stream   *sdk.StreamableHTTPHandler

	anyHost, anyOrigin bool
	hosts, origins     map[string]bool
	maxBody            int64

	mu     sync.Mutex
	last   []tool.Tool
	served map[string]tool.Tool

	calls  atomic.Uint64
	nonces atomic.Uint64
	idents sync.Map // identity nonce -> ledger.State
	labels sessionLabels
}

// identityHeader carries, inside the server only, the key under which an
// HTTP request's identity is kept while it is served. A client's own value
// is always removed.
const identityHeader = "X-Lode-Mcp-Identity"

// NewServer returns a server for reg. It lists reg's tools now, and again
// whenever a request finds reg's snapshot changed (a registry that
// implements tool.Notifier is followed as it changes); connected clients
// are then told with notifications/tools/list_changed. Every error wraps
// ErrOption.
func NewServer(reg tool.Registry, opts ...ServerOption) (*Server, error) {
	cfg := serverConfig{name: "lode", version: Version, maxBody: DefaultMaxBodyBytes}
	for _, o := range opts {
		if o == nil {
			cfg.fail("nil ServerOption")
			continue
		}
		o(&cfg)
	}
	if reg == nil {
		cfg.fail("nil registry")
	}
	if cfg.maxBody <= 0 {
		cfg.fail("WithMaxBodyBytes: %d is not positive", cfg.maxBody)
	}
	if cfg.name == "" {
		cfg.fail("WithImplementation: empty name")
	}
	if len(cfg.errs) > 0 {
		return nil, errors.Join(cfg.errs...)
	}
	s := &Server{
		reg: reg, handler: cfg.handler, filter: cfg.filter, identify: cfg.identify,
		state: cfg.state, tracer: cfg.tracer, maxBody: cfg.maxBody,
		hosts: make(map[string]bool), origins: make(map[string]bool),
		served: make(map[string]tool.Tool),
	}
	if s.handler == nil {
		var hopts []xtool.HandlerOption
		if s.tracer != nil {
			hopts = append(hopts, xtool.WithTracer(s.tracer))
		}
		s.handler = xtool.NewHandler(reg, hopts...)
	}
	if s.state == nil {
		s.state = ledger.NewThread(ledger.WithClock(nil))
	}
	for _, h := range cfg.hosts {
		if h == "*" {
			s.anyHost = true
		}
		s.hosts[strings.ToLower(h)] = true
	}
	for _, o := range cfg.origins {
		if o == "*" {
			s.anyOrigin = true
		}
		s.origins[strings.ToLower(strings.TrimSuffix(o, "/"))] = true
	}
	so := cfg.sdkOpts
	so.HasTools = true
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: cfg.name, Version: cfg.version}, &so)
	s.sdk.AddReceivingMiddleware(s.middleware)
	s.sdk.AddSendingMiddleware(traceOutgoing)
	s.stream = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.sdk }, &sdk.StreamableHTTPOptions{
		Stateless: cfg.stateless,
		// ServeHTTP checks Host and Origin itself, with the allow-lists.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        s.maxBody,
	})
	s.Refresh()
	if n, ok := reg.(tool.Notifier); ok {
		n.OnToolsChanged(s.Refresh)
	}
	return s, nil
}

// SDK returns the go-sdk server underneath, to add what a registry does
// not hold: prompts, resources, resource templates.
func (s *Server) SDK() *sdk.Server { return s.sdk }

// Refresh serves the registry's current tools now. Requests do it too
// when they find the registry changed; call Refresh to notify idle
// clients at once.
func (s *Server) Refresh() {
	tools := s.reg.Tools()
	s.mu.Lock()
	defer s.mu.Unlock()
	if sameSnapshot(tools, s.last) {
		return
	}
	s.last = tools
	seen := make(map[string]bool, len(tools))
	for _, t := range tools {
		seen[t.Name] = true
		if old, ok := s.served[t.Name]; ok && sameTool(old, t) {
			continue
		}
		if err := s.addTool(t); err != nil {
			slog.Default().Warn("lode: mcp server cannot serve a tool", "tool", t.Name, "error", err)
			delete(s.served, t.Name)
			continue
		}
		s.served[t.Name] = t
	}
	var gone []string
	for name := range s.served {
		if !seen[name] {
			gone = append(gone, name)
			delete(s.served, name)
		}
	}
	if len(gone) > 0 {
		s.sdk.RemoveTools(gone...)
	}
}

func (s *Server) addTool(t tool.Tool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	s.sdk.AddTool(toSDKTool(t), func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		// The middleware answers every tools/call; this is only reached if
		// the SDK routes one past it.
		return s.callTool(ctx, req), nil
	})
	return nil
}

func sameSnapshot(a, b []tool.Tool) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func sameTool(a, b tool.Tool) bool {
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description && a.Hints == b.Hints &&
		bytes.Equal(a.Schema, b.Schema) && bytes.Equal(a.OutputSchema, b.OutputSchema) && bytes.Equal(a.Annotations, b.Annotations)
}

// Run serves one session over t until the client or ctx ends it.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error { return s.sdk.Run(ctx, t) }

// ServeStdio serves one session over this process's stdin and stdout (see
// ServeIO for how it treats lines that are not messages and the end of
// stdin). It returns nil when stdin ends and every request has been
// answered.
func (s *Server) ServeStdio(ctx context.Context) error { return s.ServeIO(ctx, os.Stdin, os.Stdout) }

// Connect starts a session over t and returns at once; the session runs
// until either side closes it.
func (s *Server) Connect(ctx context.Context, t sdk.Transport) (*sdk.ServerSession, error) {
	return s.sdk.Connect(ctx, t, nil)
}

type callKey struct{}

type callInfo struct {
	req   *sdk.CallToolRequest
	state ledger.State
	// input, set by AskClient on a session of a revision that forbids a
	// server's own requests during a call, is the question the result must
	// carry instead (an input-required result), with its signed state.
	input      *sdk.ElicitParams
	inputState string
}

// CallRequest returns the MCP request of the tools/call a served tool is
// running for, so that it can talk back to the client: progress
// (Session.NotifyProgress), logging, sampling, elicitation.
func CallRequest(ctx context.Context) (*sdk.CallToolRequest, bool) {
	ci, ok := ctx.Value(callKey{}).(*callInfo)
	if !ok {
		return nil, false
	}
	return ci.req, true
}

// CallerState returns the state the server's filter saw for the caller of
// the tools/call a served tool is running for.
func CallerState(ctx context.Context) (ledger.State, bool) {
	ci, ok := ctx.Value(callKey{}).(*callInfo)
	if !ok {
		return nil, false
	}
	return ci.state, true
}

var errNoIdentity = errors.New("the request carries no identity")

// stateFor returns the state of the request's caller.
func (s *Server) stateFor(req sdk.Request) (ledger.State, error) {
	if s.identify == nil {
		return s.state, nil
	}
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil {
		return s.state, nil
	}
	if v, ok := s.idents.Load(extra.Header.Get(identityHeader)); ok {
		return v.(ledger.State), nil
	}
	return nil, errNoIdentity
}

// withCaller returns ctx saying, for the request's spans, whose run it
// serves: the conversation the caller's _meta named and the user, tenant
// and roles of the caller as this server identified it (its state's
// metadata), never as the request claims.
func (s *Server) withCaller(ctx context.Context, req sdk.Request) context.Context {
	st, err := s.stateFor(req)
	if err != nil || st == nil {
		return ctx
	}
	remote, _ := runspan.From(ctx)
	id := runspan.Of(ctx, remote.Conversation, st)
	if len(id.Attributes()) == 0 {
		return ctx
	}
	return runspan.With(ctx, id)
}

func (s *Server) callTool(ctx context.Context, req *sdk.CallToolRequest) *sdk.CallToolResult {
	name := ""
	var raw []byte
	if req.Params != nil {
		name, raw = req.Params.Name, req.Params.Arguments
	}
	st, err := s.stateFor(req)
	if err != nil {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("the call to %s was refused: %v", name, err)}}}
	}
	s.restoreLabels(req, st)
	ctx = xtool.WithCaller(ctx, st)
	ctx = xtool.WithReporter(ctx, reporter{req: req})
	if s.filter != nil {
		ctx = xtool.WithOffered(ctx, s.filter(ctx, st, s.reg.Tools()))
	}
	ci := &callInfo{req: req, state: st}
	ctx = context.WithValue(ctx, callKey{}, ci)
	id := "mcp-" + strconv.FormatUint(s.calls.Add(1), 10)
	res := s.handler.Execute(ctx, artifact.ToolCall{ID: id, Name: name, Arguments: string(raw)})
	s.keepLabels(req, st)
	if ci.input != nil {
		// The call did not run: the client asks its person and calls again
		// with the answer (multi round-trip requests).
		return inputRequired(ci.input, ci.inputState)
	}
	return toCallResult(res)
}

func (s *Server) listTools(ctx context.Context, req sdk.Request, res sdk.Result) (sdk.Result, error) {
	lr, ok := res.(*sdk.ListToolsResult)
	if s.filter == nil || !ok {
		return res, nil
	}
	st, err := s.stateFor(req)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "tools/list refused: " + err.Error()}
	}
	s.restoreLabels(req, st)
	allowed := make(map[string]bool)
	for _, t := range s.filter(ctx, st, s.reg.Tools()) {
		allowed[t.Name] = true
	}
	out := *lr
	out.Tools = make([]*sdk.Tool, 0, len(lr.Tools))
	for _, t := range lr.Tools {
		if allowed[t.Name] {
			out.Tools = append(out.Tools, t)
		}
	}
	return &out, nil
}

// middleware answers tools/call and filters tools/list, keeps the served
// tools in step with the registry, traces requests, and keeps a panic
// (in a filter, an identity hook) from reaching the transport.
func (s *Server) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (res sdk.Result, err error) {
		s.Refresh()
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		ctx = continueTrace(ctx, req)
		ctx = s.withCaller(ctx, req)
		var span trace.Span
		if s.tracer != nil {
			ctx, span = s.startSpan(ctx, method, req)
		}
		defer func() {
			if p := recover(); p != nil {
				slog.Default().ErrorContext(ctx, "lode: mcp server recovered a panic", "method", method, "panic", p, "stack", string(debug.Stack()))
				if method == "tools/call" {
					res, err = complete(req, &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("the server failed while handling this call (%v)", p)}}}), nil
				} else {
					res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("internal error: %v", p)}
				}
			}
			if span != nil {
				endSpan(span, res, err)
			}
		}()
		switch method {
		case "tools/call":
			if r, ok := req.(*sdk.CallToolRequest); ok {
				return complete(req, s.callTool(ctx, r)), nil
			}
		case "tools/list":
			res, err = next(ctx, method, req)
			if err != nil {
				return res, err
			}
			return s.listTools(ctx, req, res)
		}
		return next(ctx, method, req)
	}
}

func (s *Server) startSpan(ctx context.Context, method string, req sdk.Request) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method)}
	name := method
	if r, ok := req.(*sdk.CallToolRequest); ok && r.Params != nil {
		name += " " + r.Params.Name
		attrs = append(attrs,
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", r.Params.Name))
	}
	if ss, ok := req.GetSession().(*sdk.ServerSession); ok && ss.ID() != "" {
		attrs = append(attrs, attribute.String("mcp.session.id", ss.ID()))
	}
	return s.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...),
		trace.WithAttributes(runspan.Attributes(ctx)...))
}

func endSpan(span trace.Span, res sdk.Result, err error) {
	var rpc *jsonrpc.Error
	switch {
	case errors.As(err, &rpc):
		span.SetAttributes(attribute.String("error.type", strconv.FormatInt(rpc.Code, 10)))
		span.SetStatus(codes.Error, rpc.Message)
	case err != nil:
		span.SetAttributes(attribute.String("error.type", "_OTHER"))
		span.SetStatus(codes.Error, err.Error())
	default:
		if r, ok := res.(*sdk.CallToolResult); ok && r.IsError {
			span.SetAttributes(attribute.String("error.type", "tool_error"))
			msg := ""
			if len(r.Content) > 0 {
				if t, ok := r.Content[0].(*sdk.TextContent); ok {
					msg = t.Text
				}
			}
			span.SetStatus(codes.Error, msg)
		}
	}
	span.End()
}
