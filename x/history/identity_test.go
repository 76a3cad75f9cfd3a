package history_test

import (
	"context"
	"iter"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/history"
	"github.com/lodeworks/lode/x/provider/script"
)

// seeingSummarizer answers every request with a summary and keeps the span
// attributes of the run it was asked in: what its adapter's chat span
// carries.
type seeingSummarizer struct{ saw []attribute.KeyValue }

func (s *seeingSummarizer) Invoke(ctx context.Context, _ *provider.Request) iter.Seq2[artifact.Artifact, error] {
	s.saw = loop.SpanAttributes(ctx)
	return func(yield func(artifact.Artifact, error) bool) {
		yield(artifact.Text{Content: "The user dictated notes."}, nil)
	}
}

// A summary's model call is made in the turn's run: its spans name the
// thread and its caller as the turn's do.
func TestSummaryCallNamesTheRun(t *testing.T) {
	sum := &seeingSummarizer{}
	pol, err := history.New(history.WithBudget(1000), history.WithSummarizer(sum))
	if err != nil {
		t.Fatal(err)
	}
	th := notes(40)
	_ = th.SetMetadata("lode.user", "ann")
	if _, err := loop.New(loop.WithInvokeOptions(pol)).Turn(context.Background(), th, script.Play(script.Text("Your first note."))); err != nil {
		t.Fatal(err)
	}
	got := map[attribute.Key]string{}
	for _, kv := range sum.saw {
		got[kv.Key] = kv.Value.Emit()
	}
	want := map[attribute.Key]string{"gen_ai.conversation.id": th.ID(), "session.id": th.ID(), "user.id": "ann"}
	if len(got) != len(want) {
		t.Fatalf("summary call's run attributes %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}
