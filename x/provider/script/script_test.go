package script_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
)

func collect(p provider.Provider, ctx context.Context, req *provider.Request) ([]artifact.Artifact, error) {
	var out []artifact.Artifact
	for a, err := range p.Invoke(ctx, req) {
		if err != nil {
			return out, err
		}
		out = append(out, a)
	}
	return out, nil
}

func TestStreamsDeltasThenWholeArtifacts(t *testing.T) {
	p := script.New([]script.Step{script.Reply(
		artifact.Reasoning{Content: "hmm"},
		artifact.Text{Content: "héllo wörld"},
		artifact.ToolCall{ID: "a", Name: "f", Arguments: `{"x":1}`},
		artifact.ToolCall{ID: "b", Name: "g", Arguments: `{}`},
		artifact.Usage{InputTokens: 3},
	)}, script.WithChunkSize(4))
	got, err := collect(p, context.Background(), &provider.Request{})
	if err != nil {
		t.Fatal(err)
	}
	var text string
	args := map[int]string{}
	var whole []artifact.Artifact
	for _, a := range got {
		switch d := a.(type) {
		case artifact.TextDelta:
			if len(d.Content) > 5 {
				t.Errorf("delta %q exceeds the chunk size beyond one rune", d.Content)
			}
			text += d.Content
		case artifact.ToolCallDelta:
			args[d.Index] += d.Arguments
		case artifact.ReasoningDelta:
		default:
			whole = append(whole, a)
		}
	}
	if text != "héllo wörld" {
		t.Errorf("text deltas joined to %q", text)
	}
	if args[0] != `{"x":1}` || args[1] != `{}` {
		t.Errorf("tool call fragments by index: %v", args)
	}
	if len(whole) != 5 {
		t.Errorf("whole artifacts: %#v", whole)
	}
}

func TestRecordsRequests(t *testing.T) {
	p := script.Play(script.Text("a"), script.Text("b"))
	turns := []ledger.Turn{{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "q"}}}}
	tools := []tool.Tool{{Name: "t"}}
	req := &provider.Request{Turns: turns, Tools: tools, MaxTokens: 9}
	if _, err := collect(p, context.Background(), req); err != nil {
		t.Fatal(err)
	}
	req.Tools[0].Name = "mutated later"
	got := p.Requests()
	if len(got) != 1 || got[0].MaxTokens != 9 || got[0].Tools[0].Name != "t" || !reflect.DeepEqual(got[0].Turns, turns) {
		t.Fatalf("recorded %+v", got)
	}
	if p.Remaining() != 1 {
		t.Fatalf("remaining %d", p.Remaining())
	}
}

func TestFailures(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name   string
		step   script.Step
		deltas int
	}{
		{"fail", script.Fail(boom), 0},
		{"fail after 2", script.FailAfter(2, boom, artifact.Text{Content: "abcdefghijklmnopqrstuvwxyz0123456789"}), 2},
		{"func error", script.Func(func(*provider.Request) ([]artifact.Artifact, error) { return nil, boom }), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := collect(script.Play(c.step), context.Background(), &provider.Request{})
			if !errors.Is(err, boom) {
				t.Fatalf("err = %v", err)
			}
			if len(got) != c.deltas {
				t.Fatalf("got %d artifacts before the failure, want %d", len(got), c.deltas)
			}
		})
	}
	if _, err := collect(script.Play(), context.Background(), &provider.Request{}); !errors.Is(err, script.ErrExhausted) {
		t.Fatalf("exhausted script: %v", err)
	}
}

func TestHangEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := script.Play(script.Hang(artifact.Text{Content: "x"}))
	var err error
	for a, e := range p.Invoke(ctx, &provider.Request{}) {
		if e != nil {
			err = e
			break
		}
		if artifact.IsDelta(a) {
			cancel()
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestFuncSeesRequest(t *testing.T) {
	p := script.Play(script.Func(func(r *provider.Request) ([]artifact.Artifact, error) {
		return []artifact.Artifact{artifact.Text{Content: fmt.Sprintf("%d tools", len(r.Tools))}}, nil
	}))
	got, err := collect(p, context.Background(), &provider.Request{Tools: make([]tool.Tool, 3)})
	if err != nil {
		t.Fatal(err)
	}
	if last := got[len(got)-1]; last != (artifact.Text{Content: "3 tools"}) {
		t.Fatalf("last = %#v", last)
	}
}

func TestChunkSizeZeroMeansDefault(t *testing.T) {
	text := strings.Repeat("x", 40)
	for _, n := range []int{0, -3} {
		p := script.New([]script.Step{script.Text(text)}, script.WithChunkSize(n))
		got, err := collect(p, context.Background(), &provider.Request{})
		if err != nil {
			t.Fatal(err)
		}
		var sizes []int
		for _, a := range got {
			if d, ok := a.(artifact.TextDelta); ok {
				sizes = append(sizes, len(d.Content))
			}
		}
		if !reflect.DeepEqual(sizes, []int{script.DefaultChunkSize, script.DefaultChunkSize, 8}) {
			t.Fatalf("WithChunkSize(%d): deltas of %v bytes", n, sizes)
		}
	}
}
