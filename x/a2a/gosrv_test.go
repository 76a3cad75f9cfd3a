package a2a_test

import (
	"context"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// execFunc is a scripted agent: what the a2a-go server's executor yields.
type execFunc func(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error]

// goAgent is an a2a-go v2 executor that runs a script and counts what it
// was asked to do.
type goAgent struct {
	exec    execFunc
	runs    atomic.Int32
	cancels atomic.Int32
}

func (g *goAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	g.runs.Add(1)
	return g.exec(ctx, ec)
}

func (g *goAgent) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	g.cancels.Add(1)
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// seen records the requests a server received.
type seen struct {
	mu     sync.Mutex
	reqs   []http.Header
	bodies []string
	paths  []string
}

func (s *seen) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Header.Clone())
		s.bodies = append(s.bodies, string(body))
		s.paths = append(s.paths, r.URL.Path)
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (s *seen) headers(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, h := range s.reqs {
		out = append(out, h.Get(name))
	}
	return out
}

func (s *seen) allBodies() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.bodies, "\n")
}

// goServer serves g with the a2a-go v2 server on loopback: its card at
// the well-known path, JSON-RPC at /rpc. edit may change the card.
func goServer(t *testing.T, g *goAgent, streaming bool, edit func(c *a2a.AgentCard)) (string, *seen) {
	t.Helper()
	var s seen
	mux := http.NewServeMux()
	srv := httptest.NewServer(s.wrap(mux))
	t.Cleanup(srv.Close)
	card := &a2a.AgentCard{
		Name:        "Echo Agent",
		Description: "Says things back.",
		Version:     "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{
			a2a.NewAgentInterface(srv.URL+"/rpc", a2a.TransportProtocolJSONRPC),
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: streaming},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{
			{ID: "summarise", Name: "Summarise", Description: "Summarises a text.", Tags: []string{"text"}, Examples: []string{"Summarise this mail"}},
			{ID: "translate", Name: "Translate", Description: "Translates a text.", Tags: []string{"text"}},
		},
	}
	if edit != nil {
		edit(card)
	}
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/rpc", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(g)))
	return srv.URL, &s
}

// answer is a script that works, streams text in two chunks, and
// completes; meta, if any, is put on the completed status.
func answer(first, second string, meta map[string]any) execFunc {
	return func(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
		return func(yield func(a2a.Event, error) bool) {
			if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
				return
			}
			ev := a2a.NewArtifactEvent(ec, a2a.NewTextPart(first))
			if !yield(ev, nil) {
				return
			}
			more := a2a.NewArtifactUpdateEvent(ec, ev.Artifact.ID, a2a.NewTextPart(second))
			more.Append, more.LastChunk = true, true
			if !yield(more, nil) {
				return
			}
			done := a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil)
			for k, v := range meta {
				done.SetMeta(k, v)
			}
			yield(done, nil)
		}
	}
}

// hang is a script that starts working, says so on started, and waits
// for its context to end.
func hang(started chan<- struct{}) execFunc {
	return func(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
		return func(yield func(a2a.Event, error) bool) {
			if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
				return
			}
			if started != nil {
				close(started)
			}
			<-ctx.Done()
		}
	}
}

// textOf is the text of the message's parts.
func textOf(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		b.WriteString(p.Text())
	}
	return b.String()
}
