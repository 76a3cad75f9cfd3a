package loop_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

// untracked hides a State's CallTracker, so the loop falls back to reading
// the whole history.
type untracked struct{ ledger.State }

// trusting reports no open calls whatever its history holds: a loop that
// asks it repairs nothing.
type trusting struct{ *ledger.Thread }

func (trusting) OpenCalls() []ledger.OpenCall { return nil }

func TestRepairReusedCallID(t *testing.T) {
	call := artifact.ToolCall{ID: "x", Name: "deploy", Arguments: "{}"}
	answer := artifact.ToolResult{ToolCallID: "x", Name: "deploy", Content: "done"}
	cases := []struct {
		name      string
		turns     func(th *ledger.Thread)
		wantFixes int
	}{
		{"reused and left open", func(th *ledger.Thread) {
			_ = th.Append(ledger.RoleAssistant, call)
			_ = th.Append(ledger.RoleTool, answer)
			_ = th.Append(ledger.RoleUser, artifact.Text{Content: "again"})
			_ = th.Append(ledger.RoleAssistant, call)
		}, 1},
		{"reused and answered", func(th *ledger.Thread) {
			_ = th.Append(ledger.RoleAssistant, call)
			_ = th.Append(ledger.RoleTool, answer)
			_ = th.Append(ledger.RoleAssistant, call)
			_ = th.Append(ledger.RoleTool, answer)
		}, 0},
		{"same ID twice while open", func(th *ledger.Thread) {
			_ = th.Append(ledger.RoleAssistant, call, call)
		}, 1},
		{"a result for a call never made", func(th *ledger.Thread) {
			_ = th.Append(ledger.RoleTool, answer)
			_ = th.Append(ledger.RoleAssistant, call)
		}, 1},
		{"a call in a user turn is not the model's", func(th *ledger.Thread) {
			_ = th.Append(ledger.RoleUser, call)
		}, 0},
	}
	for _, c := range cases {
		for _, tracked := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/tracked=%v", c.name, tracked), func(t *testing.T) {
				th := userThread("go")
				c.turns(th)
				before := th.Len()
				var st ledger.State = th
				if !tracked {
					st = untracked{th}
				}
				prov := script.Play(script.Text("ok"))
				if _, err := loop.New().Turn(context.Background(), st, prov); err != nil {
					t.Fatal(err)
				}
				fixes := 0
				for _, tu := range th.Turns()[before:] {
					for _, a := range tu.Artifacts {
						if r, ok := a.(artifact.ToolResult); ok && r.Content == loop.InterruptedMessage {
							fixes++
						}
					}
				}
				if fixes != c.wantFixes {
					t.Fatalf("%d repair results, want %d; ledger %s", fixes, c.wantFixes, roles(th))
				}
				if open := th.OpenCalls(); len(open) != 0 {
					t.Fatalf("calls still open after the turn: %v", open)
				}
			})
		}
	}
}

func TestRepairAsksTheTracker(t *testing.T) {
	th := userThread("go")
	_ = th.Append(ledger.RoleAssistant, artifact.ToolCall{ID: "x", Name: "deploy"})
	if _, err := loop.New().Turn(context.Background(), trusting{th}, script.Play(script.Text("ok"))); err != nil {
		t.Fatal(err)
	}
	if got := roles(th); got != "user,assistant,assistant" {
		t.Fatalf("ledger = %s; a State that tracks its calls must be asked rather than scanned", got)
	}
}

// BenchmarkTurnThreadLength is one turn's loop overhead on threads of
// growing length, each holding tool calls and their results: it must not
// grow with the thread.
func BenchmarkTurnThreadLength(b *testing.B) {
	step := loop.New(loop.WithHandlers(loop.HandlerFunc(func(context.Context, artifact.Artifact, loop.Emitter) error { return nil })))
	prov := replay{text: "Hello there."}
	ctx := context.Background()
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			base := make([]ledger.Turn, 0, n)
			for i := 0; len(base) < n; i++ {
				id := fmt.Sprint("c", i)
				base = append(base,
					ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "look it up"}}},
					ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.ToolCall{ID: id, Name: "lookup", Arguments: `{"q":"x"}`}}},
					ledger.Turn{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: id, Name: "lookup", Content: "found"}}},
					ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Text{Content: "Here it is."}}},
				)
			}
			base = base[:n]
			fresh := func() *ledger.Thread {
				return ledger.NewThread(ledger.WithID("bench"), ledger.WithClock(nil), ledger.WithTurns(base...))
			}
			th := fresh()
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				// Rebuild every n turns so that the thread stays between n and
				// 2n turns, where appending costs what it costs amortized;
				// the rebuild is not timed.
				if i++; i%max(n, 256) == 0 {
					b.StopTimer()
					th = fresh()
					b.StartTimer()
				}
				if _, err := step.Turn(ctx, th, prov); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
