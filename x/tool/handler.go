package tool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/internal/structjson"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	toolpkg "github.com/lodeworks/lode/tool"
)

// DefaultTimeout bounds one call unless the handler or the tool says
// otherwise.
const DefaultTimeout = 2 * time.Minute

// ErrDenied is what an Approver returns to refuse a call.
var ErrDenied = errors.New("xtool: call denied")

// Approver decides whether a call that needs approval may run (see
// WithApprover). Returning nil approves; ErrAwaitingApproval (or an error wrapping
// it) leaves the decision to a person later, and the run pauses; any other
// error — ErrDenied or a failure of the approver itself — refuses the call,
// and the model is told so.
type Approver func(ctx context.Context, t toolpkg.Tool, call artifact.ToolCall) error

// Handler executes tool calls. It is safe for concurrent use.
type Handler struct {
	registry  toolpkg.Registry
	tracer    trace.Tracer
	duration  metric.Float64Histogram
	logger    *slog.Logger
	timeout   time.Duration
	budget    toolpkg.Budget
	fullLimit int
	sem       chan struct{}
	approver  Approver
	approval  approvalRules
	sandbox   toolpkg.Sandbox
	sandboxes map[string]toolpkg.Sandbox
	gate      Gate
	guards    []loop.Guard
	content   capture.Config
	plain     structjson.Encoders // the results' plain struct types
	noInline  bool
	// overran holds the names of tools that promised to run inline
	// (Tool.Inline) and passed their timeout there: their calls are
	// handed off from then on.
	overran    sync.Map
	anyOverran atomic.Bool // overran holds a name
}

// HandlerOption configures a Handler.
type HandlerOption func(*Handler)

// WithTracer records a span per execution, after the OpenTelemetry GenAI
// conventions.
func WithTracer(tracer trace.Tracer) HandlerOption { return func(h *Handler) { h.tracer = tracer } }

// WithMeter records the duration of every execution in the histogram
// "lode.tool.duration" (seconds), by tool name, tool type and error type.
// A nil meter records nothing.
func WithMeter(m metric.Meter) HandlerOption {
	return func(h *Handler) {
		if m == nil {
			h.duration = nil
			return
		}
		hist, err := m.Float64Histogram("lode.tool.duration",
			metric.WithUnit("s"), metric.WithDescription("Duration of tool executions"))
		if err == nil {
			h.duration = hist
		}
	}
}

// WithLogger sets where panics in tools are logged with their stacks;
// nil means slog.Default.
func WithLogger(l *slog.Logger) HandlerOption { return func(h *Handler) { h.logger = l } }

// WithTimeout sets the per-call timeout for tools that set none; d <= 0
// keeps DefaultTimeout.
func WithTimeout(d time.Duration) HandlerOption { return func(h *Handler) { h.timeout = d } }

// WithBudget bounds what the model sees of each result, for tools that set
// no budget of their own. Zero fields keep DefaultBudgetBytes and
// DefaultBudgetLines; negative ones lift the limit.
func WithBudget(b toolpkg.Budget) HandlerOption { return func(h *Handler) { h.budget = b } }

// WithMaxFullBytes caps what ToolResult.Full keeps of a result cut to the
// budget, and so what the ledger stores of it: a rendering longer than n
// bytes keeps no Full (the marker tells the model so; Value still holds what
// the tool returned, for the application), which is also what lets a large
// map or slice render in memory near the budget. Zero keeps
// DefaultMaxFullBytes; a negative n keeps every rendering whole.
func WithMaxFullBytes(n int) HandlerOption { return func(h *Handler) { h.fullLimit = n } }

// WithFullLimit is WithMaxFullBytes.
//
// Deprecated: use WithMaxFullBytes, whose name says what it bounds.
func WithFullLimit(n int) HandlerOption { return WithMaxFullBytes(n) }

// WithConcurrency bounds how many calls this handler runs at once, across
// every turn and thread it serves; n < 1 means no bound beyond the loop's.
func WithConcurrency(n int) HandlerOption {
	return func(h *Handler) {
		if n > 0 {
			h.sem = make(chan struct{}, n)
		} else {
			h.sem = nil
		}
	}
}

// WithApprover gates the calls that need approval: those to tools whose
// hints say Destructive, and those WithApprovalFor and WithApprovalRule
// select. Without an approver every call runs.
func WithApprover(a Approver) HandlerOption { return func(h *Handler) { h.approver = a } }

// WithSandbox assigns the sandbox tools run in (a mounted source sees it
// through tool.SandboxFrom). Without it, or with nil, they get
// tool.NoSandbox, which provides nothing: a tool that needs a sandbox
// refuses to run rather than touch the host.
func WithSandbox(sb toolpkg.Sandbox) HandlerOption { return func(h *Handler) { h.sandbox = sb } }

// WithToolSandbox assigns a sandbox to one tool, overriding WithSandbox; a
// nil sandbox is tool.NoSandbox.
func WithToolSandbox(name string, sb toolpkg.Sandbox) HandlerOption {
	return func(h *Handler) {
		if h.sandboxes == nil {
			h.sandboxes = make(map[string]toolpkg.Sandbox)
		}
		h.sandboxes[name] = sb
	}
}

// WithoutInline runs every tool on a goroutine of its own, the promise of
// Tool.Inline notwithstanding: for an application that runs tools it does
// not trust to keep it.
func WithoutInline() HandlerOption { return func(h *Handler) { h.noInline = true } }

// NewHandler returns a Handler that runs the tools of registry; a nil
// registry is an empty one, so every call gets an unknown-tool result.
func NewHandler(registry toolpkg.Registry, opts ...HandlerOption) *Handler {
	if registry == nil {
		registry = toolpkg.NewRegistry()
	}
	h := &Handler{registry: registry, timeout: DefaultTimeout}
	for _, o := range opts {
		o(h)
	}
	if h.timeout <= 0 {
		h.timeout = DefaultTimeout
	}
	if h.sandbox == nil {
		h.sandbox = toolpkg.NoSandbox()
	}
	return h
}

// Handle executes art if it is a tool call and emits its result as a
// RoleTool turn; other artifacts are ignored.
func (h *Handler) Handle(ctx context.Context, art artifact.Artifact, e loop.Emitter) error {
	call, ok := art.(artifact.ToolCall)
	if !ok {
		return nil
	}
	res, pend := h.executeCall(h.capture(ctx), call)
	var out artifact.Artifact = res
	if pend != nil {
		out = *pend
	}
	e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{out}})
	return nil
}

type offeredKey struct{}

// WithOffered marks ctx with the tools a caller may use, for servers that
// execute calls outside a loop turn (an MCP server applying a per-request
// filter). Inside a loop turn, the turn's request decides.
func WithOffered(ctx context.Context, tools []toolpkg.Tool) context.Context {
	return context.WithValue(ctx, offeredKey{}, tools)
}

// offered returns the tools this call may use and whether a restriction
// applies at all.
func offered(ctx context.Context) ([]toolpkg.Tool, bool) {
	if tools, ok := ctx.Value(offeredKey{}).([]toolpkg.Tool); ok {
		return tools, true
	}
	if t, ok := loop.CurrentTurn(ctx); ok && t.Request != nil {
		return t.Request.Tools, true
	}
	return nil, false
}

// failure kinds, reported as error.type on spans and metrics.
const (
	errUnknown   = "tool_not_found" // also a tool the caller may not use
	errDuplicate = "duplicate_call_id"
	errArgs      = "invalid_arguments"
	errRefused   = "refused"
	errTimeout   = "timeout"
	errCanceled  = "canceled"
	errPanic     = "panic"
	errRender    = "unrenderable_result"
	errTool      = "tool_error"
	errRemote    = "remote_error"
)

// outcome is one execution, as the span and metric see it.
type outcome struct {
	errType string
	err     error
	stack   []byte
	remote  bool
	// tool is the registered tool the call reached, nil when it named none
	// or one the caller may not use.
	tool *toolpkg.Tool
	// hidden marks a refused call that named a registered tool the caller
	// may not use; it shows on the span only.
	hidden bool
	// pending is set when the call waits for a person's approval.
	pending *artifact.Pending
	// approved is the decision the call runs under, from Resume.
	approved *artifact.Decision
	// attrs are the Gate's, for the span only.
	attrs []attribute.KeyValue
}

// Execute runs one call and returns its result; it never fails; every
// failure is an error result. It is what Handle uses, exposed for servers
// that execute calls outside a loop (an MCP server).
//
// Content, error messages included, is bounded by the tool's budget (or
// the handler's) and is valid UTF-8 whatever the tool or the model sent.
func (h *Handler) Execute(ctx context.Context, call artifact.ToolCall) artifact.ToolResult {
	ctx = h.capture(ctx)
	if len(h.guards) == 0 {
		res, _ := h.executeCall(ctx, call)
		return res
	}
	st, _ := Caller(ctx)
	if te := loop.CheckAll(ctx, h.guards, loop.Check{At: artifact.AtCall, State: st, Call: call}); te != nil {
		return loop.StoppedResult(call, te)
	}
	// With content capture, the span records the result once the guards
	// passed it.
	var hold *capture.Hold
	if capture.From(ctx).On {
		ctx, hold = capture.WithHold(ctx)
	}
	res, _ := h.executeCall(ctx, call)
	te := loop.CheckAll(ctx, h.guards, loop.Check{At: artifact.AtResult, State: st, Call: call, Result: res})
	if hold != nil {
		hold.Release(te == nil)
	}
	if te != nil {
		return loop.StoppedResult(call, te)
	}
	return res
}

// WithCapture records the content of calls whose context turns no
// capture on (capture.From): an MCP server's calls, which no loop's
// WithCapture reaches. A context that carries a Config keeps its own.
func WithCapture(c capture.Config) HandlerOption { return func(h *Handler) { h.content = c } }

// capture is ctx with the handler's capture Config when ctx has none on.
func (h *Handler) capture(ctx context.Context) context.Context {
	if !h.content.On || capture.From(ctx).On {
		return ctx
	}
	return capture.With(ctx, h.content)
}

// WithGuards checks the calls Execute runs, outside a loop (an MCP
// server's): a call's arguments before it runs, its result before it is
// returned; a guard that stops either gives an error result that says
// why. Calls a loop hands to Handle are checked by the loop's own guards
// (loop.WithGuards), not these.
func WithGuards(g ...loop.Guard) HandlerOption {
	return func(h *Handler) { h.guards = append(h.guards, g...) }
}

// executeCall is Execute, also returning the Pending record of a call that
// waits for approval; its result then says so, for callers that cannot wait.
func (h *Handler) executeCall(ctx context.Context, call artifact.ToolCall) (artifact.ToolResult, *artifact.Pending) {
	var start time.Time
	if h.duration != nil {
		start = time.Now() // the clock is read only for the histogram
	}
	ctx, span := h.startSpan(ctx, call)
	res, out := h.execute(ctx, call)
	var budget toolpkg.Budget
	if out.tool != nil {
		budget = out.tool.Budget
	}
	if !res.Truncated { // a streamed rendering comes bounded
		maxBytes, maxLines := resolveBudget(budget, h.budget)
		text := res.Content
		if !utf8.ValidString(text) { // scanning is cheaper than rebuilding
			text = strings.ToValidUTF8(text, "\uFFFD")
		}
		res.Content, res.Truncated, res.Full = cutToBudget(text, maxBytes, maxLines, resolveFullLimit(h.fullLimit))
	}
	h.finish(ctx, span, res, out, start)
	return res, out.pending
}

func (h *Handler) execute(ctx context.Context, call artifact.ToolCall) (artifact.ToolResult, outcome) {
	fail := func(kind, msg string, err error) (artifact.ToolResult, outcome) {
		return artifact.ToolResult{ToolCallID: call.ID, Name: call.Name, Content: msg, IsError: true},
			outcome{errType: kind, err: err}
	}
	if err := ctx.Err(); err != nil {
		return fail(errCanceled, fmt.Sprintf("the call to %s was cancelled before it started", clip(call.Name, maxNameQuote)), err)
	}
	tools, restricted := offered(ctx)
	b, found := h.registry.Lookup(call.Name)
	if restricted && !offers(tools, call.Name) {
		// A tool the caller may not use is refused in the very words, error
		// type, budget and metric series of one that does not exist, so
		// that no caller can probe for hidden names; only the operator's
		// span tells the two apart.
		var v Verdict
		if found {
			v = h.ask(ctx, b, call)
		}
		if !v.Hide && v.Withheld && v.Refuse != "" {
			r, o := fail(errRefused, v.Refuse, nil)
			o.remote, o.tool, o.attrs = b.Remote, &b.Tool, v.Attrs
			return r, o
		}
		r, o := fail(errUnknown, unknownTool(ctx, call.Name, tools), nil)
		o.hidden, o.attrs = found, v.Attrs
		return r, o
	}
	var verdict Verdict
	if found {
		verdict = h.ask(ctx, b, call)
	}
	if !found || verdict.Hide {
		if !restricted {
			tools = h.visible(ctx, h.registry.Tools())
		}
		msg := unknownTool(ctx, call.Name, tools)
		if err := h.registry.Err(); err != nil {
			msg += " Some tool sources failed to load: " + err.Error()
		}
		r, o := fail(errUnknown, msg, nil)
		o.hidden, o.attrs = found, verdict.Attrs
		return r, o
	}
	name := call.Name // a registered name: short and plain
	if verdict.Refuse != "" {
		r, o := fail(errRefused, verdict.Refuse, nil)
		o.remote, o.tool, o.attrs = b.Remote, &b.Tool, verdict.Attrs
		return r, o
	}
	above, _ := ctx.Value(gateKey{}).(*callCtx)
	if above != nil && !approvedCall(ctx, call) { // an approved call was counted when it paused
		if msg := limitAbove(above, b, call); msg != "" {
			r, o := fail(errRefused, msg, nil)
			o.remote, o.tool, o.attrs = b.Remote, &b.Tool, verdict.Attrs
			return r, o
		}
	}
	if t, ok := loop.CurrentTurn(ctx); ok && duplicateBefore(ctx, t.Answer, call) {
		r, o := fail(errDuplicate, fmt.Sprintf("another call in this answer already uses the id %s; this call to %s was not run — give every call its own id", quoteID(call.ID), name), nil)
		o.tool = &b.Tool
		return r, o
	}
	remote := b.Remote
	sb := h.sandbox
	if s, ok := h.sandboxes[b.Tool.Name]; ok {
		sb = s
		if sb == nil {
			sb = toolpkg.NoSandbox()
		}
	}
	prepared, err := b.Prepare(sb, call.Arguments)
	if err != nil {
		o := outcome{errType: errArgs, err: err, remote: remote, tool: &b.Tool, attrs: verdict.Attrs}
		return artifact.ToolResult{ToolCallID: call.ID, Name: call.Name, IsError: true,
			Content: fmt.Sprintf("%s. The arguments you sent were: %s", clip(err.Error(), maxArgErr), quoteArgs(call.Arguments))}, o
	}
	var approved *artifact.Decision
	reason, ask := h.needsApproval(ctx, b, call)
	if ask || above != nil {
		if d, ok := loop.Approved(ctx); ok && d.Approved && d.ToolCallID == call.ID {
			kept := d // moved to the heap only when the call runs approved
			approved = &kept
		} else if reason, err := h.gateCall(ctx, above, ask, reason, b, call); errors.Is(err, ErrAwaitingApproval) {
			r, o := pendingResult(call, reason, remote, &b.Tool)
			o.attrs = verdict.Attrs
			return r, o
		} else if err != nil {
			r, o := fail(errRefused, fmt.Sprintf("the call to %s was not approved: %v", name, err), err)
			o.remote, o.tool, o.attrs = remote, &b.Tool, verdict.Attrs
			return r, o
		}
	}

	if h.sem != nil {
		select {
		case h.sem <- struct{}{}:
			defer func() { <-h.sem }()
		case <-ctx.Done():
			r, o := fail(errCanceled, fmt.Sprintf("the call to %s was cancelled while waiting to run", name), ctx.Err())
			o.remote, o.tool = remote, &b.Tool
			return r, o
		}
	}
	timeout := h.timeout
	if b.Tool.Timeout > 0 {
		timeout = b.Tool.Timeout
	}
	var gate *Handler
	if h.approver != nil || h.gate != nil || len(h.approval.names) > 0 || len(h.approval.rules) > 0 {
		gate = h
	}
	var ran runResult
	if b.Tool.Inline && !remote && !h.noInline && !h.distrusts(b.Tool.Name) {
		var overran bool
		if ran, overran = runInline(ctx, gate, timeout, prepared, func() {
			h.distrust(ctx, b.Tool.Name, call, "ended its goroutine, the caller's, with runtime.Goexit")
		}); overran {
			h.distrust(ctx, b.Tool.Name, call, "passed its timeout", "timeout", timeout)
		}
	} else {
		ran = run(ctx, gate, timeout, prepared)
	}
	v, err, stack := ran.v, ran.err, ran.stack

	res := artifact.ToolResult{ToolCallID: call.ID, Name: call.Name}
	o := outcome{remote: remote, tool: &b.Tool, approved: approved, attrs: verdict.Attrs}
	if lerr := label(ctx, &b.Tool); lerr != nil {
		// The result is withheld: shown without its labels, it could steer
		// calls that the labels would have narrowed.
		res.IsError, res.Content = true, fmt.Sprintf("the call to %s ran, but its result is withheld: the thread could not record what it brought in (%v)", call.Name, lerr)
		o.errType, o.err = errTool, lerr
		return res, o
	}
	switch {
	case stack != nil:
		h.log().ErrorContext(ctx, "lode: tool panicked", "tool", call.Name, "call_id", call.ID, "panic", err, "stack", string(stack))
		res.IsError, res.Content = true, fmt.Sprintf("the tool %s crashed (%s); this is a fault in the tool, not in your arguments", call.Name, clip(err.Error(), maxPanicText))
		o.errType, o.err, o.stack = errPanic, err, stack
		return res, o
	case err != nil && errors.Is(ran.ctxErr, context.DeadlineExceeded) && ctx.Err() == nil:
		res.IsError, res.Content = true, fmt.Sprintf("the call to %s timed out after %s and was abandoned; it may have partly taken effect", call.Name, timeout)
		o.errType, o.err = errTimeout, err
		return res, o
	case err != nil && ctx.Err() != nil:
		res.IsError, res.Content = true, fmt.Sprintf("the call to %s was cancelled before it finished", call.Name)
		o.errType, o.err = errCanceled, err
		return res, o
	case err != nil && errors.Is(err, ErrAwaitingApproval):
		reason := "a call made for it waits for approval"
		if pe := (*PendingError)(nil); errors.As(err, &pe) && pe.Reason != "" {
			reason = pe.Reason
		}
		r, o := pendingResult(call, reason, remote, &b.Tool)
		o.attrs = verdict.Attrs
		return r, o
	case err != nil:
		var ae *toolpkg.ArgumentsError
		switch {
		case errors.As(err, &ae):
			o.errType = errArgs
			res.Content = fmt.Sprintf("%s. The arguments you sent were: %s", clip(err.Error(), maxArgErr), quoteArgs(call.Arguments))
		case remote:
			o.errType = errRemote
			res.Content = fmt.Sprintf("the tool %s failed: %v", call.Name, err)
		default:
			o.errType = errTool
			res.Content = err.Error()
		}
		res.IsError, o.err = true, err
		return res, o
	}
	if err := h.fill(&res, v, b.Tool.Budget); err != nil {
		res.IsError, res.Content, res.Value = true, fmt.Sprintf("the tool %s returned a result that cannot be shown: %v", call.Name, err), v
		o.errType, o.err = errRender, err
		return res, o
	}
	if res.IsError {
		o.errType = errTool
	}
	return res, o
}

// distrust runs the tool named on a goroutine of its own from now on: it
// broke its promise to run inline, as the call did.
func (h *Handler) distrust(ctx context.Context, name string, call artifact.ToolCall, did string, attrs ...any) {
	h.overran.Store(name, struct{}{})
	h.anyOverran.Store(true)
	h.log().WarnContext(ctx, "lode: a tool that promised to run inline "+did+"; its calls run on a goroutine of their own from now on",
		append([]any{"tool", call.Name, "call_id", call.ID}, attrs...)...)
}

// distrusts reports whether the tool named broke its promise to run
// inline; the common answer, no, costs one atomic load.
func (h *Handler) distrusts(name string) bool {
	if !h.anyOverran.Load() {
		return false
	}
	_, ok := h.overran.Load(name)
	return ok
}

// fill renders v, what the tool returned, into res; see renderTo.
func (h *Handler) fill(res *artifact.ToolResult, v any, budget toolpkg.Budget) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("rendering panicked: %s", clip(fmt.Sprint(p), maxPanicText))
		}
	}()
	res.Value = v
	var r *toolpkg.Result
	switch rv := v.(type) {
	case *toolpkg.Result:
		if rv == nil {
			return nil
		}
		r = rv
	case toolpkg.Result:
		r = &rv
	default:
		return h.renderTo(res, v, budget)
	}
	res.IsError, res.Parts = r.IsError, r.Parts
	res.Content = r.Content
	if res.Content == "" && r.Value != nil {
		err = h.renderTo(res, r.Value, budget)
	}
	return err
}

// approvedCall reports whether call runs under a decision approving it.
func approvedCall(ctx context.Context, call artifact.ToolCall) bool {
	d, ok := loop.Approved(ctx)
	return ok && d.Approved && d.ToolCallID == call.ID
}

func (h *Handler) approve(ctx context.Context, t toolpkg.Tool, call artifact.ToolCall) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the approver failed: %v", p)
		}
	}()
	if h.approver == nil {
		return ErrNoApprover
	}
	if err := h.approver(ctx, t, call); err != nil {
		return err
	}
	return nil
}

func (h *Handler) log() *slog.Logger {
	if h.logger != nil {
		return h.logger
	}
	return slog.Default()
}

func offers(tools []toolpkg.Tool, name string) bool {
	for i := range tools {
		if tools[i].Name == name {
			return true
		}
	}
	return false
}

// duplicateBefore reports whether an earlier call of the answer has call's
// ID: the first call with an ID is the one that runs. The loop says where
// in the answer this call stands, which tells apart two identical calls.
func duplicateBefore(ctx context.Context, answer []artifact.Artifact, call artifact.ToolCall) bool {
	at, indexed := loop.ArtifactIndex(ctx)
	for i, a := range answer {
		c, ok := a.(artifact.ToolCall)
		if !ok || c.ID != call.ID {
			continue
		}
		if indexed {
			return i < at
		}
		return c != call
	}
	return false
}

// unknownTool refuses a call to name, listing every tool the caller may
// use: a model that guessed wrong needs the whole list to choose again, and
// the result budget, not a count, keeps it affordable. A caller marked by
// WithCaller outside a loop turn (an MCP client's, which has no turns) is
// told what holds for it rather than for a turn.
func unknownTool(ctx context.Context, name string, tools []toolpkg.Tool) string {
	scope := "in this turn"
	if _, turn := loop.CurrentTurn(ctx); !turn && ctx.Value(callerKey{}) != nil {
		scope = "to this caller"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "unknown tool %s. ", quoteName(name))
	if len(tools) == 0 {
		fmt.Fprintf(&sb, "No tools are available %s.", scope)
		return sb.String()
	}
	fmt.Fprintf(&sb, "Tools available %s: ", scope)
	for i, t := range tools {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(t.Name)
	}
	sb.WriteByte('.')
	return sb.String()
}

// Bounds on what an error message quotes of what the model or the tool
// sent, so that the message stays short and its point stays visible.
const (
	maxArgErr    = 1000 // a validation error, which may quote a value
	maxPanicText = 200  // a panic's value
	maxQuoted    = 300  // the arguments as sent
	maxNameQuote = 100  // a tool name or call ID the registry does not know
)

// quoteArgs shows the model what it sent, bounded.
func quoteArgs(raw string) string {
	if strings.TrimSpace(raw) == "" {
		return "(nothing)"
	}
	return quote(raw, maxQuoted)
}

func quoteName(name string) string { return quote(name, maxNameQuote) }
func quoteID(id string) string     { return quote(id, maxNameQuote) }

// quote is %q of s, cut after limit bytes with its length said.
func quote(s string, limit int) string {
	if len(s) > limit {
		return fmt.Sprintf("%q… (%d bytes)", s[:runeStart(s, limit)], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// clip cuts s after limit bytes, saying how long it was.
func clip(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:runeStart(s, limit)], len(s))
}
