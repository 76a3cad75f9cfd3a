package loop_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
)

// seer is an Admitter and an invoke option: it records what the request
// held when it was asked, and the settlements.
type seer struct {
	mu      sync.Mutex
	tools   []int
	settled []error
	refuse  error
	panics  bool
}

func (s *seer) ApplyInvoke(context.Context, ledger.State, *provider.Request) error { return nil }

func (s *seer) Admit(_ context.Context, _ ledger.State, req *provider.Request, est loop.Estimate) (loop.Settle, error) {
	if s.panics {
		panic("admitter broke")
	}
	s.mu.Lock()
	s.tools = append(s.tools, len(req.Tools))
	s.mu.Unlock()
	if est.InputTokens <= 0 {
		return nil, errors.New("no estimate")
	}
	if s.refuse != nil {
		return nil, s.refuse
	}
	return func(_ context.Context, _ []artifact.Artifact, err error) {
		s.mu.Lock()
		s.settled = append(s.settled, err)
		s.mu.Unlock()
	}, nil
}

func someTools(n int) []tool.Tool {
	out := make([]tool.Tool, n)
	for i := range out {
		out[i] = tool.Tool{Name: fmt.Sprintf("t%d", i), Schema: []byte(`{"type":"object"}`)}
	}
	return out
}

// An Admitter sees the request every option made, wherever it was given.
func TestAdmitterSeesTheResolvedRequest(t *testing.T) {
	tools := provider.WithTools(someTools(3))
	for _, c := range []struct {
		name string
		step func(a *seer) *loop.Step
		run  func(a *seer) []provider.InvokeOption
	}{
		{"first among the Step's options", func(a *seer) *loop.Step { return loop.New(loop.WithInvokeOptions(a, tools)) }, nil},
		{"last among them", func(a *seer) *loop.Step { return loop.New(loop.WithInvokeOptions(tools, a)) }, nil},
		{"WithAdmitters", func(a *seer) *loop.Step { return loop.New(loop.WithAdmitters(a), loop.WithInvokeOptions(tools)) }, nil},
		{"in Run's options, before the tools", func(*seer) *loop.Step { return loop.New() },
			func(a *seer) []provider.InvokeOption { return []provider.InvokeOption{a, tools} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := &seer{}
			var opts []provider.InvokeOption
			if c.run != nil {
				opts = c.run(a)
			}
			if _, err := c.step(a).Run(context.Background(), userThread("go"), script.Play(script.Text("ok")), opts...); err != nil {
				t.Fatal(err)
			}
			if len(a.tools) != 1 || a.tools[0] != 3 || len(a.settled) != 1 || a.settled[0] != nil {
				t.Fatalf("admitter saw %v tools, settled %v", a.tools, a.settled)
			}
		})
	}
}

// A refusal stops the turn before the provider is called, and settles
// what was admitted before it; a panic is an *OptionError.
func TestAdmitterRefuses(t *testing.T) {
	limit := &loop.LimitError{Limit: loop.LimitCost, UsedUSD: 1, MaxUSD: 1}
	first, second := &seer{}, &seer{refuse: limit}
	prov := script.Play(script.Text("never"))
	th := userThread("go")
	_, err := loop.New(loop.WithAdmitters(first, second)).Run(context.Background(), th, prov)
	if err != limit {
		t.Fatalf("err = %v, want the admitter's own", err)
	}
	if len(prov.Requests()) != 0 || len(th.Turns()) != 1 {
		t.Fatalf("%d requests sent, %d turns", len(prov.Requests()), len(th.Turns()))
	}
	if len(first.settled) != 1 || first.settled[0] != limit {
		t.Fatalf("the first admission was settled with %v", first.settled)
	}
	_, err = loop.New(loop.WithInvokeOptions(&seer{panics: true})).Run(context.Background(), userThread("go"), prov)
	var oe *loop.OptionError
	if !errors.As(err, &oe) || oe.Index != 0 || oe.Panic == nil {
		t.Fatalf("err = %v, want an *OptionError for option 0", err)
	}
}

// A failed stream settles with the failure, saying whether anything
// arrived.
func TestAdmissionSettlesAFailure(t *testing.T) {
	a := &seer{}
	_, err := loop.New(loop.WithAdmitters(a)).Run(context.Background(), userThread("go"),
		script.Play(script.FailAfter(1, errors.New("reset"), artifact.Text{Content: "partial"})))
	var pe *loop.ProviderError
	if !errors.As(err, &pe) || !pe.Started {
		t.Fatalf("err = %v, want a started *ProviderError", err)
	}
	if len(a.settled) != 1 || !errors.As(a.settled[0], &pe) {
		t.Fatalf("settled with %v", a.settled)
	}
}

// EstimateInput counts the tools' schemas and the answer is priced at
// the output price; a cap the limit cannot pay refuses the request.
func TestQuote(t *testing.T) {
	small := &provider.Request{Turns: userThread("go").Turns()}
	big := &provider.Request{Turns: small.Turns, Tools: someTools(100)}
	if s, b := loop.EstimateInput(small), loop.EstimateInput(big); b < s+loop.EstimateToolsTokens+100*64 {
		t.Fatalf("estimate with 100 tools %d, without %d", b, s)
	}
	prices := perToken{"m": 0.001}
	q := loop.Estimate{InputTokens: 100}.Quote(&provider.Request{}, prices, "m")
	if q.AnswerTokens != loop.DefaultAnswerTokens || q.InputUSD != 0.1 || q.AnswerTokenUSD < 0.000999 || q.AnswerTokenUSD > 0.001001 {
		t.Fatalf("quote = %+v", q)
	}
	if n, ok := q.Fit(0.15); !ok || n != 49 && n != 50 {
		t.Fatalf("fit $0.15 = %d, %v", n, ok)
	}
	if _, ok := q.Fit(0.11); ok {
		t.Fatal("$0.11 cannot pay for the input and 16 answer tokens")
	}
	req := &provider.Request{}
	q.Cap(req, q.AnswerTokens)
	if req.MaxTokens != loop.DefaultAnswerTokens {
		t.Fatalf("MaxTokens = %d, want the default answer sent: the server knows no bound", req.MaxTokens)
	}
	q.Cap(req, 50)
	if req.MaxTokens != 50 {
		t.Fatalf("MaxTokens = %d, want it lowered", req.MaxTokens)
	}
	q.Cap(req, 80)
	if req.MaxTokens != 50 {
		t.Fatalf("MaxTokens = %d, raised", req.MaxTokens)
	}
	// A model whose maximum output is known keeps to it unasked.
	known := loop.Estimate{InputTokens: 100}.Quote(&provider.Request{}, maxOut{perToken: prices, n: 1000}, "m")
	req = &provider.Request{}
	if known.Cap(req, 1000); req.MaxTokens != 0 || !known.Bounded {
		t.Fatalf("MaxTokens = %d, want it unset under the model's own bound", req.MaxTokens)
	}
	if known.Cap(req, 999); req.MaxTokens != 999 {
		t.Fatalf("MaxTokens = %d, want it lowered", req.MaxTokens)
	}
}

// maxOut is a Pricer that knows a maximum output.
type maxOut struct {
	perToken
	n int
}

func (m maxOut) MaxOutput(string) (int, bool) { return m.n, true }
