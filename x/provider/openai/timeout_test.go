package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"

	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

// stall writes head, flushes it, then sends nothing until the client gives
// up.
func stall(status int, ctype, head string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if status == 0 {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, head)
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}
}

// pinger sends a keep-alive comment every few milliseconds, forever.
func pinger(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := io.WriteString(w, ": ping\n\n"); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

func TestTimeouts(t *testing.T) {
	const short = 60 * time.Millisecond
	for _, tc := range []struct {
		name     string
		reply    http.HandlerFunc
		opts     []Option
		idle     bool
		limit    time.Duration
		mentions string
	}{
		{
			name:  "stream stalls after a chunk",
			reply: stall(200, "text/event-stream", "data: "+roleChunk()+"\n\n"),
			opts:  []Option{WithIdleTimeout(short)}, idle: true, limit: short, mentions: "WithIdleTimeout",
		},
		{
			name:  "stream never answers",
			reply: stall(0, "", ""),
			opts:  []Option{WithIdleTimeout(short)}, idle: true, limit: short, mentions: "WithIdleTimeout",
		},
		{
			name:  "whole body stalls",
			reply: stall(200, "application/json", `{"id":"chatcmpl-1","choices":[`),
			opts:  []Option{WithStreaming(false), WithIdleTimeout(short)}, idle: true, limit: short, mentions: "WithIdleTimeout",
		},
		{
			name:  "pings keep the idle limit away but not the request limit",
			reply: pinger,
			opts:  []Option{WithIdleTimeout(time.Hour), WithTimeout(short)}, limit: short, mentions: "WithTimeout",
		},
		{
			name:  "negative idle limit is off",
			reply: stall(200, "text/event-stream", "data: "+roleChunk()+"\n\n"),
			opts:  []Option{WithIdleTimeout(-1), WithTimeout(short)}, limit: short, mentions: "WithTimeout",
		},
		{
			name:  "whole answer that never comes",
			reply: stall(0, "", ""),
			opts:  []Option{WithStreaming(false), WithTimeout(short)}, limit: short, mentions: "WithTimeout",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.reply)
			_, _, err := providertest.CollectContext(t.Context(), f.provider(t, tc.opts...), &provider.Request{})
			var te *TimeoutError
			if !errors.As(err, &te) {
				t.Fatalf("err = %v (%T), want a *TimeoutError", err, err)
			}
			if te.Idle != tc.idle || te.Limit != tc.limit {
				t.Errorf("TimeoutError = %+v, want Idle %v Limit %s", *te, tc.idle, tc.limit)
			}
			if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err = %v does not match ErrTimeout and context.DeadlineExceeded", err)
			}
			if errors.Is(err, ErrIdleTimeout) != tc.idle {
				t.Errorf("errors.Is(err, ErrIdleTimeout) = %v, want %v", !tc.idle, tc.idle)
			}
			if !strings.Contains(err.Error(), tc.mentions) || !strings.Contains(err.Error(), tc.limit.String()) {
				t.Errorf("message %q does not name %s and %s", err, tc.mentions, tc.limit)
			}
		})
	}
}

// A consumer that takes its time with each delta is not a silent server.
func TestIdleTimeoutIgnoresSlowConsumer(t *testing.T) {
	const idle = 30 * time.Millisecond
	f := newFake(t, sse(roleChunk(), textChunk("a"), textChunk("b"), finishChunk("stop")))
	var got []artifact.Artifact
	for a, err := range f.provider(t, WithIdleTimeout(idle)).Invoke(t.Context(), &provider.Request{}) {
		if err != nil {
			t.Fatalf("err = %v", err)
		}
		if artifact.IsDelta(a) {
			time.Sleep(3 * idle) // the consumer is slow: that is the scenario, not synchronisation
		}
		got = append(got, a)
	}
	if len(got) != 4 {
		t.Errorf("got %d artifacts, want 4: %v", len(got), got)
	}
}

func TestIdleTimeoutDefault(t *testing.T) {
	for _, tc := range []struct {
		opt  Option
		want time.Duration
	}{
		{nil, DefaultIdleTimeout},
		{WithIdleTimeout(0), DefaultIdleTimeout},
		{WithIdleTimeout(5 * time.Second), 5 * time.Second},
		{WithIdleTimeout(-1), -1},
	} {
		p, err := New(WithModel("m"), WithBaseURL("http://127.0.0.1:1/v1"), tc.opt)
		if err != nil {
			t.Fatal(err)
		}
		if p.core.IdleTimeout != tc.want {
			t.Errorf("idle timeout = %s, want %s", p.core.IdleTimeout, tc.want)
		}
		if p.core.Timeout != 0 {
			t.Errorf("request timeout = %s, want 0 (none)", p.core.Timeout)
		}
	}
}

// The error Run returns still says which limit ended the stream.
func TestIdleTimeoutThroughRun(t *testing.T) {
	f := newFake(t, stall(200, "text/event-stream", "data: "+roleChunk()+"\n\n"))
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "hi"})
	_, err := loop.New().Run(t.Context(), th, f.provider(t, WithIdleTimeout(40*time.Millisecond)))
	if !errors.Is(err, ErrIdleTimeout) {
		t.Fatalf("Run: err = %v, want ErrIdleTimeout", err)
	}
	if !strings.Contains(err.Error(), "WithIdleTimeout") {
		t.Errorf("message %q does not name WithIdleTimeout", err)
	}
}
