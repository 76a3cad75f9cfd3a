package mcp

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

// DefaultAskTimeout bounds how long AskClient waits for the client's
// person to answer, unless WithAskTimeout says otherwise.
const DefaultAskTimeout = 10 * time.Minute

// DefaultAskHint is what AskClient's refusal tells a caller whose client
// cannot ask a person, unless WithAskHint says otherwise.
const DefaultAskHint = "call it from an MCP client that supports elicitation, or ask whoever runs this server to change what needs approval"

// ErrCannotAsk: the call needs a person's approval and the client of its
// session cannot ask one (it declared no form elicitation, or the call
// came from no MCP session at all). The call is refused, never run.
var ErrCannotAsk = errors.New("mcp: the client cannot ask a person for approval")

// ErrNotApproved: the client's person did not approve the call — declined,
// cancelled, answered approve: false, or did not answer in time, or the
// elicitation failed. It matches xtool.ErrDenied too.
var ErrNotApproved error = denial("mcp: the client's person did not approve it")

// denial is a refusal that also matches xtool.ErrDenied, without that
// error's words in its text.
type denial string

func (d denial) Error() string        { return string(d) }
func (d denial) Is(target error) bool { return target == xtool.ErrDenied }

// AskOption configures AskClient.
type AskOption func(*askConfig)

type askConfig struct {
	reason  xtool.ApprovalRule
	timeout time.Duration
	hint    string
	key     []byte // signs the state of input-required results
}

// WithAskReason says why a call needs approval, for the question and the
// refusal; give it the rule (or rules, joined) the Handler's
// WithApprovalRule uses. Without it, or when it does not ask, the reason
// is the tool's destructive hint or a plain "this server requires
// approval".
func WithAskReason(r xtool.ApprovalRule) AskOption { return func(c *askConfig) { c.reason = r } }

// WithAskTimeout bounds the wait for the person's answer; no answer in
// time refuses the call. d <= 0 means DefaultAskTimeout.
func WithAskTimeout(d time.Duration) AskOption { return func(c *askConfig) { c.timeout = d } }

// WithAskHint replaces DefaultAskHint: what a caller whose client cannot
// ask should do to get the call approved. Empty means the default.
func WithAskHint(hint string) AskOption { return func(c *askConfig) { c.hint = hint } }

// approveSchema is the form AskClient sends: approve (required) and an
// optional reason, the flat shape MCP elicitation allows.
var approveSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"approve": map[string]any{"type": "boolean", "title": "Approve", "description": "Run this tool call once"},
		"reason":  map[string]any{"type": "string", "title": "Reason", "description": "Why (optional)"},
	},
	"required": []string{"approve"},
}

// AskClient is an xtool.Approver for a Server's Handler (WithHandler): a
// call that needs approval is put to the person behind the MCP client
// through elicitation, in the session of the tools/call it runs for. The
// question names the tool, its arguments and the reason, and asks for
// approve (a boolean) and an optional reason. Only an accepted answer with
// approve true runs the call, once; a decline, a cancel, approve false, an
// elicitation error or no answer within the timeout refuse it with an
// error wrapping ErrNotApproved. A client that declared no elicitation
// capability — or a call that comes from no MCP session — cannot be asked:
// the call is refused (ErrCannotAsk) with a message saying that it needs a
// person's approval, why, and how to get it, and never runs.
//
// Before revision 2026-07-28 the server sends elicitation/create while the
// call waits (bounded by WithAskTimeout). From 2026-07-28 on a server may
// not, so the first tools/call gets an input-required result carrying the
// question and a signed state; the client asks, then calls again with the
// answer, and the call runs only if the state matches its tool and
// arguments and the answer approves (the go-sdk client does this round
// trip itself).
func AskClient(opts ...AskOption) xtool.Approver {
	cfg := askConfig{}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.timeout <= 0 {
		cfg.timeout = DefaultAskTimeout
	}
	if cfg.hint == "" {
		cfg.hint = DefaultAskHint
	}
	cfg.key = make([]byte, 32)
	_, _ = rand.Read(cfg.key) // crypto/rand.Read never fails
	return cfg.ask
}

func (c *askConfig) why(ctx context.Context, t tool.Tool, call artifact.ToolCall) string {
	if c.reason != nil {
		if r, ok := c.reason(ctx, t, call); ok && r != "" {
			return r
		}
	}
	if t.Hints.Destructive {
		return "the tool is marked destructive"
	}
	return "this server requires approval for " + t.Name
}

func (c *askConfig) ask(ctx context.Context, t tool.Tool, call artifact.ToolCall) error {
	reason := c.why(ctx, t, call)
	ci, _ := ctx.Value(callKey{}).(*callInfo)
	var ss *sdk.ServerSession
	if ci != nil && ci.req != nil {
		ss = ci.req.Session
	}
	if !canElicitForm(ss) {
		return fmt.Errorf("%w: the call needs a person's approval (%s), and this client declared no elicitation capability to ask one; %s", ErrCannotAsk, reason, c.hint)
	}
	args := call.Arguments
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	q := &sdk.ElicitParams{Mode: ElicitForm, RequestedSchema: approveSchema,
		Message: fmt.Sprintf("Approve the call to %s with arguments %s? It needs approval because %s.", t.Name, args, reason)}
	if negotiated(ci.req) >= resultTypeRevision {
		return c.askByInput(ci, t, call, q)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := ss.Elicit(ctx, q)
	switch {
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("%w: no answer within %s", ErrNotApproved, c.timeout)
	case err != nil:
		return fmt.Errorf("%w: asking failed: %v", ErrNotApproved, err)
	}
	return decided(res)
}

// errAsked stands for the result of a call whose question went back to
// the client inside an input-required result; the Server sends that
// result instead.
var errAsked = errors.New("mcp: the call waits for the client's answer")

// askByInput asks as revisions from 2026-07-28 on require: the first
// tools/call gets an input-required result carrying the question and a
// state that binds it to the tool and arguments; the client's retry
// carries the answer and the state back, and only then may the call run.
func (c *askConfig) askByInput(ci *callInfo, t tool.Tool, call artifact.ToolCall, q *sdk.ElicitParams) error {
	state := c.sign(t.Name, call.Arguments)
	p := ci.req.Params
	if ans, ok := p.InputResponses[approvalInput]; ok {
		if !hmac.Equal([]byte(p.RequestState), []byte(state)) {
			return fmt.Errorf("%w: the answer sent belongs to another call", ErrNotApproved)
		}
		res, ok := ans.(*sdk.ElicitResult)
		if !ok {
			return fmt.Errorf("%w: the answer sent is not an elicitation result", ErrNotApproved)
		}
		return decided(res)
	}
	ci.input, ci.inputState = q, state
	return errAsked
}

// approvalInput names AskClient's question among a result's input requests.
const approvalInput = "lode_approval"

// sign binds a question to the call it is about, so that an answer sent
// back with other arguments approves nothing.
func (c *askConfig) sign(name, args string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(name))
	m.Write([]byte{0})
	m.Write([]byte(args))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// decided reads the person's answer: only accept with approve true runs.
func decided(res *sdk.ElicitResult) error {
	if res == nil {
		return fmt.Errorf("%w: the client sent no answer", ErrNotApproved)
	}
	said := ""
	if r, ok := res.Content["reason"].(string); ok && strings.TrimSpace(r) != "" {
		said = "; their reason: " + strings.TrimSpace(r)
	}
	switch ElicitAction(res.Action) {
	case ElicitAccept:
		if ok, _ := res.Content["approve"].(bool); ok {
			return nil
		}
		return fmt.Errorf("%w: they answered approve: false%s", ErrNotApproved, said)
	case ElicitDecline:
		return fmt.Errorf("%w: they declined%s", ErrNotApproved, said)
	case ElicitCancel:
		return fmt.Errorf("%w: they dismissed the question", ErrNotApproved)
	}
	return fmt.Errorf("%w: the client answered %q", ErrNotApproved, res.Action)
}

// canElicitForm reports whether the session's client declared elicitation
// in form mode (an empty elicitation capability means form, as the
// protocol's first revision with elicitation had it).
func canElicitForm(ss *sdk.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return false
	}
	caps := ip.Capabilities.Elicitation
	return caps.Form != nil || caps.URL == nil
}
