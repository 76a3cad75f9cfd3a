package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

type searchIn struct {
	Query string   `json:"query"`
	Limit int      `json:"limit"`
	Tags  []string `json:"tags,omitempty"`
}

type searchOut struct {
	OK    bool   `json:"ok"`
	Count int    `json:"count"`
	Query string `json:"query"`
}

const searchArgs = `{"query":"weather in Oslo tomorrow","limit":10,"tags":["forecast","europe"]}`

func noop(_ context.Context, in searchIn) (searchOut, error) {
	return searchOut{OK: true, Count: in.Limit, Query: in.Query}, nil
}

// BenchmarkDispatch measures one call through the Handler — parse,
// validate, run, render, emit — and, beside it, the floor: decoding the
// same arguments and encoding the same result with encoding/json.
func BenchmarkDispatch(b *testing.B) {
	b.Run("handler", func(b *testing.B) {
		reg := tool.NewRegistry()
		if err := tool.RegisterFunc(reg, "search", "Search", noop); err != nil {
			b.Fatal(err)
		}
		h := xtool.NewHandler(reg)
		c := artifact.ToolCall{ID: "c1", Name: "search", Arguments: searchArgs}
		e := loop.EmitterFunc(func(context.Context, loop.Event) {})
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if err := h.Handle(ctx, c, e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json-baseline", func(b *testing.B) {
		raw := []byte(searchArgs)
		b.ReportAllocs()
		for b.Loop() {
			var in searchIn
			if err := json.Unmarshal(raw, &in); err != nil {
				b.Fatal(err)
			}
			out, _ := noop(context.Background(), in)
			if _, err := json.Marshal(out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkParallelCalls runs one assistant turn of 8 calls to a tool that
// sleeps 100 ms; the turn takes about 100 ms when they run at once.
func BenchmarkParallelCalls(b *testing.B) {
	reg := tool.NewRegistry()
	_ = reg.Register(tool.Tool{Name: "sleep"}, func(ctx context.Context, _ tool.Sandbox, _ map[string]any) (any, error) {
		select {
		case <-time.After(100 * time.Millisecond):
			return "slept", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	var calls []artifact.Artifact
	for i := range 8 {
		calls = append(calls, artifact.ToolCall{ID: fmt.Sprint(i), Name: "sleep", Arguments: "{}"})
	}
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)))
	reply := script.Reply(calls...)
	for b.Loop() {
		th := ledger.NewThread()
		if _, err := step.Turn(context.Background(), th, script.Play(reply)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFilteredTools is the per-turn cost of offering a filtered view
// of 10,000 registered tools: the snapshot plus a filter that keeps the
// read-only half for a viewer.
func BenchmarkFilteredTools(b *testing.B) {
	reg := tool.NewRegistry()
	for i := range 10000 {
		_ = reg.Register(tool.Tool{Name: fmt.Sprintf("tool_%05d", i), Hints: tool.Hints{ReadOnly: i%2 == 0}},
			func(context.Context, tool.Sandbox, map[string]any) (any, error) { return nil, nil })
	}
	filter := func(_ context.Context, st ledger.State, tools []tool.Tool) []tool.Tool {
		if role, _ := st.Metadata("role"); role == "admin" {
			return tools
		}
		out := make([]tool.Tool, 0, len(tools)/2)
		for _, t := range tools {
			if t.Hints.ReadOnly {
				out = append(out, t)
			}
		}
		return out
	}
	opt := xtool.WithFilteredTools(reg, filter)
	st := ledger.NewThread(ledger.WithMetadata(map[string]string{"role": "viewer"}))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		req := &provider.Request{}
		if err := opt.ApplyInvoke(ctx, st, req); err != nil || len(req.Tools) != 5000 {
			b.Fatal(err, len(req.Tools))
		}
	}
}
