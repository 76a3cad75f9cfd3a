package mcp_test

import (
	"context"
	"log/slog"
	"reflect"
	"strconv"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// A long pack tool reports progress and logs with xtool.Progress and
// xtool.Log; lode's server forwards progress to a client that sent a
// progress token, and logs at or above the level the client set.
func TestServerForwardsToolReports(t *testing.T) {
	reg := tool.NewRegistry()
	err := reg.Register(tool.Tool{Name: "index", Description: "Indexes files"}, func(ctx context.Context, _ tool.Sandbox, _ map[string]any) (any, error) {
		for i := 1; i <= 3; i++ {
			xtool.Progress(ctx, float64(i), 3, "file "+strconv.Itoa(i))
		}
		xtool.Log(ctx, slog.LevelDebug, "hidden below the level")
		xtool.Log(ctx, slog.LevelWarn, "one file was skipped")
		xtool.Log(ctx, slog.LevelError, "done")
		return "indexed", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcp.NewServer(reg)
	if err != nil {
		t.Fatal(err)
	}
	// Before 2026-07-28 a client sets the level for the session
	// (logging/setLevel); from it on, in each request's _meta.
	cases := []struct {
		name, version string
		token         any
		progress      []string
	}{
		{"token", "2025-11-25", "tok-1", []string{"1/3 file 1", "2/3 file 2", "3/3 file 3"}},
		{"no-token", "2025-11-25", nil, nil},
		{"token-2026", "2026-07-28", 7, []string{"1/3 file 1", "2/3 file 2", "3/3 file 3"}},
		{"no-token-2026", "2026-07-28", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			progress := make(chan string, 16)
			logs := make(chan string, 16)
			client := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
					progress <- formatProgress(r.Params)
				},
				LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
					logs <- string(r.Params.Level) + " " + r.Params.Logger + ": " + r.Params.Data.(string)
				},
			})
			ct, st := sdk.NewInMemoryTransports()
			ss, err := srv.Connect(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			cs, err := client.Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			params := &sdk.CallToolParams{Name: "index", Arguments: map[string]any{}}
			if tc.version < "2026-07-28" {
				if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "warning"}); err != nil {
					t.Fatal(err)
				}
			} else {
				params.Meta = sdk.Meta{sdk.MetaKeyLogLevel: "warning"}
			}
			if tc.token != nil {
				params.SetProgressToken(tc.token)
			}
			res, err := cs.CallTool(ctx, params)
			if err != nil || res.IsError {
				t.Fatalf("call: %v %+v", err, res)
			}
			var gotLogs []string
			for len(gotLogs) < 2 {
				select {
				case l := <-logs:
					gotLogs = append(gotLogs, l)
				case <-time.After(10 * time.Second):
					t.Fatalf("logs so far %q; want two", gotLogs)
				}
			}
			if want := []string{"warning index: one file was skipped", "error index: done"}; !reflect.DeepEqual(gotLogs, want) {
				t.Errorf("logs %q, want %q", gotLogs, want)
			}
			// Notifications are handled in the order they were sent, and
			// progress went before the logs.
			var gotProgress []string
			for len(progress) > 0 {
				gotProgress = append(gotProgress, <-progress)
			}
			if !reflect.DeepEqual(gotProgress, tc.progress) {
				t.Errorf("progress %q, want %q", gotProgress, tc.progress)
			}
		})
	}
}

func formatProgress(p *sdk.ProgressNotificationParams) string {
	return strconv.FormatFloat(p.Progress, 'g', -1, 64) + "/" + strconv.FormatFloat(p.Total, 'g', -1, 64) + " " + p.Message
}
