package toolsearch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	toolpkg "github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/toolsearch"
)

// wireTools is the tools part of a chat-completions request, as the
// OpenAI adapter sends it: what deferral saves.
func wireTools(tools []toolpkg.Tool) int {
	type fn struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	type def struct {
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	defs := make([]def, len(tools))
	for i, t := range tools {
		defs[i] = def{"function", fn{t.Name, t.Description, t.Schema}}
	}
	b, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]string{{"role": "user", "content": "hello"}}, "tools": defs})
	return len(b)
}

// BenchmarkRequestSize reports the first request's size with 1,000
// mounted tools, with the search off (every tool offered) and on.
func BenchmarkRequestSize(b *testing.B) {
	reg := mounted(b, 1000)
	s := newSearch(b, reg)
	st := ledger.NewThread()
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("search=%v", on), func(b *testing.B) {
			var filter xtool.ToolFilter
			if on {
				filter = s.Filter()
			} else {
				filter = func(_ context.Context, _ ledger.State, tools []toolpkg.Tool) []toolpkg.Tool {
					var out []toolpkg.Tool
					for _, t := range tools {
						if t.Name != toolsearch.DefaultName {
							out = append(out, t)
						}
					}
					return out
				}
			}
			opt := xtool.WithFilteredTools(reg, filter)
			var size int
			for b.Loop() {
				var req provider.Request
				_ = opt.ApplyInvoke(context.Background(), st, &req)
				size = wireTools(req.Tools)
			}
			b.ReportMetric(float64(size), "request-bytes")
		})
	}
}

// big is a registry of n local tools described like the generated ones.
func big(b *testing.B, n int) toolpkg.Registry {
	reg := toolpkg.NewRegistry()
	fn := func(context.Context, toolpkg.Sandbox, map[string]any) (any, error) { return "ok", nil }
	for i := range n {
		name, desc := generated(i)
		if err := reg.Register(toolpkg.Tool{Name: "crm__" + name, Description: desc}, fn); err != nil {
			b.Fatal(err)
		}
	}
	_ = reg.Register(toolpkg.Tool{Name: invoiceTool, Description: "Email an invoice as a PDF to a customer's billing address."}, fn)
	return reg
}

// BenchmarkSearch ranks 10,000 tools by a query, with no base filter and
// with one that keeps every tool but one (as a policy would).
func BenchmarkSearch(b *testing.B) {
	for _, base := range []bool{false, true} {
		b.Run(fmt.Sprintf("base=%v", base), func(b *testing.B) {
			reg := big(b, 10000)
			opts := []toolsearch.Option{toolsearch.Defer("crm")}
			if base {
				opts = append(opts, toolsearch.WithBase(hideDelete))
			}
			s, err := toolsearch.New(reg, opts...)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if m := s.Query(ctx, nil, "email an invoice to a customer", 5); len(m) == 0 || m[0].Name != invoiceTool {
				b.Fatalf("found %+v", m)
			}
			for b.Loop() {
				s.Query(ctx, nil, "export the invoices of the workspace", 5)
			}
		})
	}
}

// BenchmarkFilter is the per-turn cost of the activation filter over
// 1,000 mounted tools, on a thread that loaded three, at two lengths.
func BenchmarkFilter(b *testing.B) {
	for _, expiry := range []int{0, 50} {
		for _, turns := range []int{10, 10000} {
			b.Run(fmt.Sprintf("expiry=%d/turns=%d", expiry, turns), func(b *testing.B) {
				reg := mounted(b, 1000)
				s := newSearch(b, reg, toolsearch.WithExpiry(expiry))
				st := ledger.NewThread(ledger.WithClock(nil))
				_ = st.Append(ledger.RoleUser, artifact.Text{Content: "go"})
				if _, err := s.Activate(context.Background(), st, invoiceTool, "crm__op_0001", "notes_add"); err != nil {
					b.Fatal(err)
				}
				for st.Len() < turns {
					_ = st.Append(ledger.RoleUser, artifact.Text{Content: "more"})
					_ = st.Append(ledger.RoleAssistant, artifact.Text{Content: "ok"})
				}
				if expiry > 0 { // keep the loads in force
					if _, err := s.Activate(context.Background(), st, invoiceTool, "crm__op_0001", "notes_add"); err != nil {
						b.Fatal(err)
					}
				}
				opt := xtool.WithFilteredTools(reg, s.Filter())
				var n int
				for b.Loop() {
					var req provider.Request
					_ = opt.ApplyInvoke(context.Background(), st, &req)
					n = len(req.Tools)
				}
				if n != 5 {
					b.Fatalf("offered %d tools", n)
				}
			})
		}
	}
}

// hideDelete is a base filter that hides one tool, at the cost of one
// pass and one slice, as a policy's filter has.
func hideDelete(_ context.Context, _ ledger.State, tools []toolpkg.Tool) []toolpkg.Tool {
	out := make([]toolpkg.Tool, 0, len(tools))
	for _, t := range tools {
		if t.Name != deleteTool {
			out = append(out, t)
		}
	}
	return out
}
