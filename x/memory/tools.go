package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/auth"
	xtool "github.com/lodeworks/lode/x/tool"
)

// Tool names.
const (
	SaveTool   = "memory_save"
	SearchTool = "memory_search"
)

// Option configures Tools, Recall and Extract.
type Option func(*config)

type config struct {
	roles    []string
	limit    int
	maxFacts int
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// WithRoles lets only callers with at least one of roles use the tools,
// have facts recalled or extracted; any other caller is refused as one
// without an identity. No roles (the default) lets every caller with a
// user use them.
func WithRoles(roles ...string) Option {
	return func(c *config) { c.roles = append(c.roles, roles...) }
}

// WithLimit sets how many facts Recall adds for one message: 0 means
// DefaultLimit, and it is capped at MaxLimit.
func WithLimit(n int) Option { return func(c *config) { c.limit = n } }

// WithMaxFacts sets how many facts Extract saves from one run: 0 means
// DefaultExtractFacts, and it is capped at MaxLimit.
func WithMaxFacts(n int) Option { return func(c *config) { c.maxFacts = n } }

// allows reports whether WithRoles lets id use memory.
func (c *config) allows(id auth.Identity) bool {
	return len(c.roles) == 0 || slices.ContainsFunc(id.Roles, func(r string) bool { return slices.Contains(c.roles, r) })
}

// Binding is one tool and the function that runs it, for
// tool.Registry.Register.
type Binding struct {
	Tool tool.Tool
	Func tool.ToolFunc
}

// Tools returns memory_save and memory_search over store. Each reads the
// caller's Scope from the caller's thread (xtool.Caller: the metadata a
// door wrote from the caller's identity), never from its arguments, and
// refuses with an error result a call whose thread has no user. The facts
// memory_search returns are marked Private.
func Tools(store Store, opts ...Option) []Binding {
	c := newConfig(opts)
	return []Binding{
		{
			Tool: tool.Tool{
				Name:        SaveTool,
				Title:       "Remember a fact",
				Description: "Save one short fact about the user, to find again in later conversations with memory_search. Save facts the user states or asks you to remember, one per call.",
				Schema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"fact":{"type":"string","description":"the fact, as a full sentence","maxLength":%d}},"required":["fact"],"additionalProperties":false}`,
					MaxFactBytes)),
			},
			Func: func(ctx context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
				sc, refusal := c.scope(ctx)
				if refusal != nil {
					return *refusal, nil
				}
				text, _ := args["fact"].(string)
				if err := CheckFact(text); err != nil {
					return tool.Result{Content: "The fact was not saved: " + strings.TrimPrefix(err.Error(), "memory: ") + ".", IsError: true}, nil
				}
				facts, err := store.Save(ctx, sc, text)
				if err != nil {
					return nil, err
				}
				return map[string]any{"saved": true, "id": facts[0].ID}, nil
			},
		},
		{
			Tool: tool.Tool{
				Name:        SearchTool,
				Title:       "Recall facts",
				Description: "Search the facts saved about the user in earlier conversations. Give a few keywords or a question; the best matches come first.",
				Schema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"query":{"type":"string","description":"keywords or a question","maxLength":%d},"limit":{"type":"integer","description":"how many facts at most (default %d)","minimum":1,"maximum":%d}},"required":["query"],"additionalProperties":false}`,
					MaxFactBytes, DefaultLimit, MaxLimit)),
				Hints: tool.Hints{ReadOnly: true, Idempotent: true, Private: true},
			},
			Func: func(ctx context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
				sc, refusal := c.scope(ctx)
				if refusal != nil {
					return *refusal, nil
				}
				query, _ := args["query"].(string)
				if len(query) > MaxFactBytes {
					query = query[:MaxFactBytes]
				}
				limit := 0
				if n, ok := args["limit"].(float64); ok {
					limit = int(n)
				}
				facts, err := store.Search(ctx, sc, query, Limit(limit))
				if err != nil {
					return nil, err
				}
				type found struct {
					ID   string `json:"id"`
					Fact string `json:"fact"`
				}
				out := make([]found, len(facts))
				for i, f := range facts {
					out[i] = found{ID: f.ID, Fact: f.Text}
				}
				return map[string]any{"facts": out}, nil
			},
		},
	}
}

// Register registers Tools(store, opts...) with reg.
func Register(reg tool.Registry, store Store, opts ...Option) error {
	var errs []error
	for _, b := range Tools(store, opts...) {
		errs = append(errs, reg.Register(b.Tool, b.Func))
	}
	return errors.Join(errs...)
}

// noIdentity is the text a call gets when its thread carries no identity.
const noIdentity = "Memory is not available: this conversation has no signed-in user. Nothing was saved or searched."

// scope reads the caller's Scope from the thread xtool.Caller finds, or the
// error result to refuse the call with.
func (c *config) scope(ctx context.Context) (Scope, *tool.Result) {
	st, ok := xtool.Caller(ctx)
	if !ok {
		return Scope{}, &tool.Result{Content: noIdentity, IsError: true}
	}
	id := auth.Of(st)
	sc, err := ScopeOf(id)
	if err != nil {
		return Scope{}, &tool.Result{Content: noIdentity, IsError: true}
	}
	if !c.allows(id) {
		return Scope{}, &tool.Result{Content: "Memory is not available to this user's roles. Nothing was saved or searched.", IsError: true}
	}
	return sc, nil
}
