package loop_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

// Every span the loop starts, whatever the entry (Run, Turn, Resume,
// Recover), names the thread and the caller the door wrote in its
// metadata (x/auth's keys, read here by string), and nothing else of the
// kind; a thread without a caller names only itself.
func TestEverySpanNamesTheRun(t *testing.T) {
	caller := map[string]string{"lode.user": "ann", "tenant": "acme", "role": "editor, viewer"}
	withCaller := map[attribute.Key]string{"gen_ai.conversation.id": "th", "session.id": "th",
		"user.id": "ann", "lode.tenant": "acme", "user.roles": `["editor","viewer"]`}
	pending := []ledger.Turn{user("ask"), answer(call("c1", "ask")),
		toolTurn(artifact.Pending{ToolCallID: "c1", Name: "ask", Arguments: `{}`, Reason: "asks first"})}
	for _, tc := range []struct {
		name  string
		meta  map[string]string
		turns []ledger.Turn
		dead  bool
		op    func(ctx context.Context, step *loop.Step, s ledger.Store, st ledger.State) error
		want  map[attribute.Key]string
		spans string
	}{
		{"run", caller, []ledger.Turn{user("hi")}, false,
			func(ctx context.Context, step *loop.Step, _ ledger.Store, st ledger.State) error {
				_, err := step.Run(ctx, st, script.Play(script.Text("hello")))
				return err
			}, withCaller, "invoke_agent lode,lode.turn"},
		{"run, no caller", nil, []ledger.Turn{user("hi")}, false,
			func(ctx context.Context, step *loop.Step, _ ledger.Store, st ledger.State) error {
				_, err := step.Run(ctx, st, script.Play(script.Text("hello")))
				return err
			}, map[attribute.Key]string{"gen_ai.conversation.id": "th", "session.id": "th"}, "invoke_agent lode,lode.turn"},
		{"turn", caller, []ledger.Turn{user("hi")}, false,
			func(ctx context.Context, step *loop.Step, _ ledger.Store, st ledger.State) error {
				_, err := step.Turn(ctx, st, script.Play(script.Text("hello")))
				return err
			}, withCaller, "lode.turn"},
		{"resume", caller, pending, false,
			func(ctx context.Context, step *loop.Step, _ ledger.Store, st ledger.State) error {
				_, err := step.Resume(ctx, st, script.Play(script.Text("done")), []artifact.Decision{loop.Approve("c1")})
				return err
			}, withCaller, "invoke_agent lode,lode.resume,lode.turn"},
		{"recover", caller, []ledger.Turn{user("clean"), answer(call("c1", "rm"))}, true,
			func(ctx context.Context, step *loop.Step, s ledger.Store, _ ledger.State) error {
				_, err := step.Recover(ctx, s, script.Play(script.Text("done")))
				return err
			}, withCaller, "invoke_agent lode,lode.recover,lode.turn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := file.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			crashed(t, s, "th", tc.dead, tc.turns...)
			st, err := s.Load(ctx, "th")
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.meta {
				if err := st.SetMetadata(k, v); err != nil {
					t.Fatal(err)
				}
			}
			if tc.name == "recover" {
				st.Close() // Recover loads it itself
			} else {
				defer st.Close()
			}
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			step := loop.New(loop.WithHandlers(&tools{}), loop.WithTracer(tp.Tracer("t")), loop.WithClock(at(recLate)), loop.WithLeaseOwner("me"))
			if err := tc.op(ctx, step, s, st); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, sp := range rec.Ended() {
				names = append(names, sp.Name())
				got := map[attribute.Key]string{}
				for _, kv := range sp.Attributes() {
					switch kv.Key {
					case "gen_ai.conversation.id", "session.id", "user.id", "user.roles", "lode.tenant":
						got[kv.Key] = kv.Value.Emit()
					}
				}
				if !maps.Equal(got, tc.want) {
					t.Errorf("span %q: %v, want %v", sp.Name(), got, tc.want)
				}
			}
			slices.Sort(names)
			names = slices.Compact(names)
			if got := strings.Join(names, ","); got != tc.spans {
				t.Errorf("spans %s, want %s", got, tc.spans)
			}
		})
	}
}
