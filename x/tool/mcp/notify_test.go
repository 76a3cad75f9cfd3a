package mcp_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/tool/mcp"
)

type empty struct{}

// chattyServer is a go-sdk server with a tool that logs and reports
// progress, and one that waits to be cancelled and says when it was.
func chattyServer(cancelled chan<- struct{}, started chan<- struct{}) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "chatty", Version: "1"}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Logging: &sdk.LoggingCapabilities{}, Tools: &sdk.ToolCapabilities{}},
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "work"}, func(ctx context.Context, req *sdk.CallToolRequest, _ empty) (*sdk.CallToolResult, any, error) {
		_ = req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "debug", Logger: "w", Data: "too fine"})
		_ = req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "warning", Logger: "w", Data: "disk nearly full"})
		_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1, Total: 2, Message: "half"})
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "wait"}, func(ctx context.Context, req *sdk.CallToolRequest, _ empty) (*sdk.CallToolResult, any, error) {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return nil, nil, ctx.Err()
	})
	return srv
}

func inMemory(srv *sdk.Server) mcp.Option {
	return mcp.WithTransport(func(ctx context.Context) (sdk.Transport, error) {
		ct, st := sdk.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	})
}

// Log messages at info and above and progress reports reach the callback
// as loop events, the progress naming its tool; they can be emitted into
// a turn's event stream as they are. Older revisions set the level with
// logging/setLevel, newer ones in each request's _meta: both are tested.
func TestNotifications(t *testing.T) {
	for _, version := range []string{"", "2025-11-25", "2025-06-18"} {
		t.Run("version "+version, func(t *testing.T) { testNotifications(t, version) })
	}
}

func testNotifications(t *testing.T, version string) {
	var (
		mu     sync.Mutex
		events []loop.Event
	)
	arrived := make(chan struct{}, 2)
	em := loop.EmitterFunc(func(ctx context.Context, ev loop.Event) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
		arrived <- struct{}{}
	})
	opts := []mcp.Option{mcp.WithName("chatty"), inMemory(chattyServer(nil, nil)),
		mcp.WithNotifications(func(ctx context.Context, n mcp.Notification) { em.Emit(ctx, n) })}
	if version != "" {
		opts = append(opts, mcp.WithProtocolVersion(version))
	}
	c, err := mcp.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Call(context.Background(), "work", nil); err != nil {
		t.Fatal(err)
	}
	<-arrived
	<-arrived
	mu.Lock()
	defer mu.Unlock()
	want := []mcp.Notification{
		{Server: "chatty", Kind: mcp.NotifyLog, Level: "warning", Logger: "w", Message: "disk nearly full", Data: "disk nearly full"},
		{Server: "chatty", Kind: mcp.NotifyProgress, Tool: "work", Progress: 1, Total: 2, Message: "half"},
	}
	if len(events) != len(want) {
		t.Fatalf("events %+v, want %+v", events, want)
	}
	for i, ev := range events {
		if n, ok := ev.(mcp.Notification); !ok || n != want[i] || ev.EventName() != "mcp_notification" {
			t.Errorf("event %d: %+v, want %+v", i, ev, want[i])
		}
	}
}

// Cancelling the caller's context sends notifications/cancelled: the
// server's handler sees its context end, and the session stays.
func TestCancelSendsCancelled(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan struct{})
	c, err := mcp.NewClient(mcp.WithName("chatty"), inMemory(chattyServer(cancelled, started)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	before, _ := c.Session(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "wait", nil)
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Call: %v, want context.Canceled", err)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handler was not cancelled: no notifications/cancelled")
	}
	if after, _ := c.Session(context.Background()); after != before {
		t.Fatal("a cancelled call replaced the session")
	}
}

// A slow tool on a go-sdk server keeps its session after a timeout, in
// every protocol era.
func TestTimeoutKeepsAnsweringServer(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("version "+version, func(t *testing.T) {
			started, cancelled := make(chan struct{}), make(chan struct{})
			opts := []mcp.Option{mcp.WithName("chatty"), inMemory(chattyServer(cancelled, started)), mcp.WithCallTimeout(200 * time.Millisecond)}
			if version != "" {
				opts = append(opts, mcp.WithProtocolVersion(version))
			}
			c, err := mcp.NewClient(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			before, err := c.Session(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Call(context.Background(), "wait", nil)
			want := `mcp: server "chatty": tools/call "wait": no answer within 200ms; the server still answers pings, so the session was kept: mcp: server did not answer in time`
			if err == nil || err.Error() != want || !errors.Is(err, mcp.ErrTimeout) {
				t.Fatalf("Call(wait) = %v, want %q", err, want)
			}
			<-cancelled
			if after, _ := c.Session(context.Background()); after != before {
				t.Fatal("the session of a server that answers was replaced")
			}
		})
	}
}
