package main

import (
	"context"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/lodeworks/lode/x/cli"
)

type quiet struct{}

func (quiet) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("ok")), nil)
	}
}

func (quiet) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// lode tools, as this build runs it, lists an a2a: agent's skills; the
// card request carries the token from token_env.
func TestToolsMountsA2A(t *testing.T) {
	var mu sync.Mutex
	var auths []string
	mux := http.NewServeMux()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	card := &a2a.AgentCard{Name: "Helper", SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srv.URL+"/rpc", a2a.TransportProtocolJSONRPC)},
		Skills: []a2a.AgentSkill{{ID: "summarise", Name: "Summarise", Description: "Summarises a text."}}}
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/rpc", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(quiet{})))

	dir := t.TempDir()
	yaml := "tools: {}\na2a:\n  - name: helper\n    url: " + srv.URL + "\n    token_env: HELPER_TOKEN\n"
	if err := os.WriteFile(filepath.Join(dir, "lode.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	t.Setenv("HELPER_TOKEN", "tok-1")
	var out, errb strings.Builder
	code := cli.Run(context.Background(), []string{"tools"}, cli.WithA2ACaller(caller{}), cli.WithIO(strings.NewReader(""), &out, &errb))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"helper__summarise", "Summarises a text.", "needs approval: the tool is marked destructive"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auths) != 1 || auths[0] != "Bearer tok-1" {
		t.Errorf("authorization %q", auths)
	}
}
