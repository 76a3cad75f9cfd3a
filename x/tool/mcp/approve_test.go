package mcp_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// guardedRegistry has a destructive tool that counts its runs.
func guardedRegistry(t *testing.T, runs *atomic.Int32) tool.Registry {
	t.Helper()
	reg := tool.NewRegistry()
	type in struct {
		Path string `json:"path"`
	}
	if err := tool.RegisterFunc(reg, "wipe", "Deletes a file", func(_ context.Context, a in) (string, error) {
		runs.Add(1)
		return "wiped " + a.Path, nil
	}, tool.WithHints(tool.Hints{Destructive: true})); err != nil {
		t.Fatal(err)
	}
	return reg
}

// askSession serves reg with AskClient and connects an SDK client of the
// protocol version with the given elicitation handler (nil: the client
// declares no elicitation).
func askSession(t *testing.T, version string, reg tool.Registry, elicit func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error), opts ...mcp.AskOption) *sdk.ClientSession {
	t.Helper()
	h := xtool.NewHandler(reg, xtool.WithApprover(mcp.AskClient(opts...)))
	srv, err := mcp.NewServer(reg, mcp.WithHandler(h))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	c := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{ElicitationHandler: elicit})
	cs, err := c.Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func wipeCall(t *testing.T, cs *sdk.ClientSession) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "wipe", Arguments: map[string]any{"path": "a.txt"}})
	if err != nil {
		// The go-sdk client fails the call itself when its own handler
		// fails during a multi round-trip request.
		return "client: " + err.Error(), true
	}
	if len(res.Content) != 1 {
		t.Fatalf("content %v", res.Content)
	}
	return res.Content[0].(*sdk.TextContent).Text, res.IsError
}

func TestAskClient(t *testing.T) {
	answer := func(res *sdk.ElicitResult, err error) func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		return func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) { return res, err }
	}
	refused := "the call to wipe was not approved: mcp: the client's person did not approve it: "
	for _, tc := range []struct {
		name   string
		elicit func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error)
		want   string
		runs   int32
	}{
		{"approve", answer(&sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil), "wiped a.txt", 1},
		{"approve false", answer(&sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": false, "reason": "keep it"}}, nil), refused + "they answered approve: false; their reason: keep it", 0},
		{"decline", answer(&sdk.ElicitResult{Action: "decline"}, nil), refused + "they declined", 0},
		{"cancel", answer(&sdk.ElicitResult{Action: "cancel"}, nil), refused + "they dismissed the question", 0},
		{"error", answer(nil, errors.New("no screen")), refused + `asking failed: calling "elicitation/create": no screen`, 0},
		{"no capability", nil, "the call to wipe was not approved: mcp: the client cannot ask a person for approval: the call needs a person's approval (the tool is marked destructive), and this client declared no elicitation capability to ask one; " + mcp.DefaultAskHint, 0},
	} {
		// Before 2026-07-28 the server asks while the call waits; from it
		// on, the answer comes with the client's second call.
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			t.Run(tc.name+"/"+version, func(t *testing.T) {
				var runs atomic.Int32
				cs := askSession(t, version, guardedRegistry(t, &runs), tc.elicit)
				text, isErr := wipeCall(t, cs)
				want := tc.want
				if tc.name == "error" && version == "2026-07-28" {
					want = `client: multi round-trip: fulfilling input request "lode_approval": no screen`
				}
				if text != want || isErr != (tc.runs == 0) || runs.Load() != tc.runs {
					t.Errorf("result %q (isError %v), %d runs; want %q and %d runs", text, isErr, runs.Load(), want, tc.runs)
				}
			})
		}
	}
}

// The question names the tool, the arguments and the reason the rule
// gives, and asks for approve and an optional reason.
func TestAskClientQuestion(t *testing.T) {
	var runs atomic.Int32
	var got *sdk.ElicitParams
	cs := askSession(t, "", guardedRegistry(t, &runs), func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		got = req.Params
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}, mcp.WithAskReason(func(context.Context, tool.Tool, artifact.ToolCall) (string, bool) { return "approve: names wipe", true }))
	if text, _ := wipeCall(t, cs); text != "wiped a.txt" || runs.Load() != 1 {
		t.Fatalf("result %q, %d runs", text, runs.Load())
	}
	if want := `Approve the call to wipe with arguments {"path":"a.txt"}? It needs approval because approve: names wipe.`; got == nil || got.Message != want {
		t.Fatalf("message %+v, want %q", got, want)
	}
	schema, _ := got.RequestedSchema.(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	if _, ok := props["approve"]; !ok || len(props) != 2 || props["reason"] == nil {
		t.Errorf("schema %v", got.RequestedSchema)
	}
}

// No answer within the timeout refuses the call (before 2026-07-28, when
// the server waits for the answer).
func TestAskClientTimeout(t *testing.T) {
	var runs atomic.Int32
	release := make(chan struct{})
	defer close(release)
	cs := askSession(t, "2025-11-25", guardedRegistry(t, &runs), func(ctx context.Context, _ *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}, mcp.WithAskTimeout(time.Millisecond))
	text, isErr := wipeCall(t, cs)
	if want := "the call to wipe was not approved: mcp: the client's person did not approve it: no answer within 1ms"; text != want || !isErr || runs.Load() != 0 {
		t.Errorf("result %q (isError %v), %d runs; want %q", text, isErr, runs.Load(), want)
	}
}

// Outside an MCP session (Execute called directly) nobody can be asked.
func TestAskClientWithoutSession(t *testing.T) {
	ask := mcp.AskClient(mcp.WithAskHint("run it with lode run"))
	err := ask(context.Background(), tool.Tool{Name: "wipe", Hints: tool.Hints{Destructive: true}}, artifact.ToolCall{ID: "1", Name: "wipe"})
	if !errors.Is(err, mcp.ErrCannotAsk) || !strings.HasSuffix(err.Error(), "(the tool is marked destructive), and this client declared no elicitation capability to ask one; run it with lode run") {
		t.Errorf("err %v", err)
	}
	if errors.Is(mcp.ErrNotApproved, xtool.ErrDenied) != true {
		t.Error("ErrNotApproved does not match xtool.ErrDenied")
	}
}

// From 2026-07-28 on, an answer sent with a state the server did not give
// for this tool and these arguments approves nothing.
func TestAskClientRefusesAForgedAnswer(t *testing.T) {
	var runs atomic.Int32
	cs := askSession(t, "2026-07-28", guardedRegistry(t, &runs), func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	})
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "wipe", Arguments: map[string]any{"path": "a.txt"},
		InputResponses: sdk.InputResponseMap{"lode_approval": &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}},
		RequestState:   "forged"})
	if err != nil {
		t.Fatal(err)
	}
	want := "the call to wipe was not approved: mcp: the client's person did not approve it: the answer sent belongs to another call"
	if len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != want || !res.IsError || runs.Load() != 0 {
		t.Errorf("result %+v, %d runs; want %q", res, runs.Load(), want)
	}
}
