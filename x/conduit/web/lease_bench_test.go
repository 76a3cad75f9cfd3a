package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/internal/pgtest"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/sqlstore/postgres"
	"github.com/lodeworks/lode/ledger/sqlstore/sqlite"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/provider/script"
)

// BenchmarkWebTurn times what a message costs the server on a real store,
// SQLite and PostgreSQL: POST /api/chat on one thread, a scripted answer,
// the whole stream read. Each turn takes the thread's lease before it
// writes and releases it at the end (two lease records; no renewal in a
// turn this short); lease-µs is what that pair costs alone on the same
// store, timed on a thread of its own between the turns.
func BenchmarkWebTurn(b *testing.B) {
	ctx := context.Background()
	stores := map[string]func(b *testing.B) ledger.Store{
		"sqlite": func(b *testing.B) ledger.Store {
			s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "web.db"))
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
		"postgres": func(b *testing.B) ledger.Store {
			s, err := postgres.Open(ctx, pgtest.Shared(b).NewDatabase(b))
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
	}
	for _, kind := range []string{"sqlite", "postgres"} {
		b.Run(kind, func(b *testing.B) {
			store := stores[kind](b)
			defer store.Close()
			steps := make([]script.Step, b.N+1)
			for i := range steps {
				steps[i] = script.Text("Noted.")
			}
			h, err := web.New(script.Play(steps...), store)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			srv := httptest.NewServer(h)
			defer srv.Close()
			post := func(id string) string {
				resp, err := http.Post(srv.URL+"/api/chat", "application/json", strings.NewReader(chatBody(id, "a message")))
				if err != nil || resp.StatusCode != 200 {
					b.Fatalf("POST: %v", err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.Header.Get("X-Lode-Thread")
			}
			id := post("")
			side, err := store.Create(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer side.Close()
			var lease time.Duration
			b.ResetTimer()
			for range b.N {
				post(id)
				b.StopTimer()
				t0 := time.Now()
				if _, err := side.AcquireLease(ctx, "bench", time.Now(), time.Minute); err != nil {
					b.Fatal(err)
				}
				if err := side.ReleaseLease(ctx, "bench"); err != nil {
					b.Fatal(err)
				}
				lease += time.Since(t0)
				b.StartTimer()
			}
			b.ReportMetric(float64(lease.Microseconds())/float64(b.N), "lease-µs/turn")
		})
	}
}
