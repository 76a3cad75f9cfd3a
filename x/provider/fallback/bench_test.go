package fallback_test

import (
	"context"
	"iter"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/fallback"
	"github.com/lodeworks/lode/x/provider/openai"
	"github.com/lodeworks/lode/x/provider/openai/openaitest"
)

// canned yields the same boxed artifacts on every call, allocating
// nothing itself, so that a benchmark over it measures the wrapper.
type canned []artifact.Artifact

func (c canned) Invoke(context.Context, *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		for _, a := range c {
			if !yield(a, nil) {
				return
			}
		}
	}
}

func cannedAnswer(deltas int) canned {
	c := make(canned, 0, deltas+3)
	for range deltas {
		c = append(c, artifact.TextDelta{Content: "word "})
	}
	return append(c, artifact.Text{Content: "..."}, artifact.Usage{InputTokens: 100, OutputTokens: 50}, artifact.Finish{Reason: "stop"})
}

func drain(b *testing.B, p provider.Provider, r *provider.Request) {
	for _, err := range p.Invoke(context.Background(), r) {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// The wrapper's own cost: a first attempt that answers 50 deltas, bare and
// wrapped (sequential, and with a hedge delay that never fires).
func BenchmarkOverhead(b *testing.B) {
	bare := cannedAnswer(50)
	seq, _ := fallback.New([]provider.Provider{bare, cannedAnswer(50)})
	hedged, _ := fallback.New([]provider.Provider{bare, cannedAnswer(50)}, fallback.WithHedge(time.Hour))
	for _, bc := range []struct {
		name string
		p    provider.Provider
	}{{"bare", bare}, {"fallback", seq}, {"fallback-hedge", hedged}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				drain(b, bc.p, req)
			}
		})
	}
}

// The same over the openai adapter and a loopback server: what the
// wrapper adds to a real invocation.
func BenchmarkOverheadOpenAI(b *testing.B) {
	for _, mode := range []string{"bare", "fallback", "fallback-hedge"} {
		b.Run(mode, func(b *testing.B) {
			srv := httptest.NewServer(openaitest.Text("Hello there, this is a short answer."))
			b.Cleanup(srv.Close)
			p, err := openai.New(openai.WithModel("m"), openai.WithAPIKey("k"),
				openai.WithBaseURL(srv.URL+"/v1"), openai.WithHTTPClient(srv.Client()))
			if err != nil {
				b.Fatal(err)
			}
			var prov provider.Provider = p
			switch mode {
			case "fallback":
				prov, _ = fallback.New([]provider.Provider{p, p})
			case "fallback-hedge":
				prov, _ = fallback.New([]provider.Provider{p, p}, fallback.WithHedge(time.Hour))
			}
			r := &provider.Request{Turns: []ledger.Turn{{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "hi"}}}}}
			b.ReportAllocs()
			for b.Loop() {
				drain(b, prov, r)
			}
		})
	}
}
