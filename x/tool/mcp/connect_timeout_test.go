package mcp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lodeworks/lode/x/tool/mcp"
)

// The connect timeout, not the call timeout, bounds connecting: a server
// slow to start (npx on a cold cache) must not use up a call's time.
func TestConnectTimeoutIsApartFromCallTimeout(t *testing.T) {
	cases := []struct {
		name    string
		opts    []mcp.Option
		atLeast time.Duration // the connection's deadline is at least this far
		atMost  time.Duration // and at most this far; 0: no deadline
	}{
		{"default", []mcp.Option{mcp.WithCallTimeout(time.Millisecond)}, mcp.DefaultConnectTimeout - time.Second, mcp.DefaultConnectTimeout},
		{"set", []mcp.Option{mcp.WithCallTimeout(time.Hour), mcp.WithConnectTimeout(3 * time.Hour)}, 2 * time.Hour, 3 * time.Hour},
		{"negative", []mcp.Option{mcp.WithCallTimeout(time.Hour), mcp.WithConnectTimeout(-1)}, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := sdk.NewServer(&sdk.Implementation{Name: "slow", Version: "1"}, nil)
			var deadline time.Time
			var has bool
			start := time.Now()
			opts := append([]mcp.Option{mcp.WithName("slow"), mcp.WithTransport(func(ctx context.Context) (sdk.Transport, error) {
				deadline, has = ctx.Deadline()
				ct, st := sdk.NewInMemoryTransports()
				if _, err := s.Connect(ctx, st, nil); err != nil {
					return nil, err
				}
				return ct, nil
			})}, tc.opts...)
			c, err := mcp.NewClient(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			end := time.Now()
			if tc.atMost == 0 {
				if has {
					t.Fatalf("connecting had a deadline %s away; want none", deadline.Sub(start))
				}
				return
			}
			if !has {
				t.Fatal("connecting had no deadline")
			}
			if deadline.Before(start.Add(tc.atLeast)) || deadline.After(end.Add(tc.atMost)) {
				t.Fatalf("connecting had %s; want the connect timeout, between %s and %s", deadline.Sub(start), tc.atLeast, tc.atMost)
			}
		})
	}
}

// A server that never completes the handshake fails the request with an
// error that names the connect timeout and wraps ErrTimeout.
func TestConnectTimeoutRunsOut(t *testing.T) {
	c, err := mcp.NewClient(mcp.WithName("mute"), mcp.WithConnectTimeout(time.Millisecond),
		mcp.WithTransport(func(ctx context.Context) (sdk.Transport, error) {
			// The other end reads every message and never answers.
			ct, st := sdk.NewInMemoryTransports()
			conn, err := st.Connect(ctx)
			if err != nil {
				return nil, err
			}
			go func() {
				defer conn.Close()
				for {
					if _, err := conn.Read(context.Background()); err != nil {
						return
					}
				}
			}()
			return ct, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Tools(context.Background())
	want := `mcp: server "mute": connect: not connected within 1ms (WithConnectTimeout): mcp: server did not answer in time`
	if err == nil || err.Error() != want || !errors.Is(err, mcp.ErrTimeout) {
		t.Fatalf("err = %v; want %q, wrapping ErrTimeout", err, want)
	}
}
