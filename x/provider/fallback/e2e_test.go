package fallback_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/fallback"
	"github.com/lodeworks/lode/x/provider/openai"
	"github.com/lodeworks/lode/x/provider/openai/openaitest"
)

// Two real chat-completions servers: the first answers 503, the second
// answers; the first server's failure is exactly one request (no retries
// here), and the second gets the same request.
func TestTwoServers(t *testing.T) {
	down := openaitest.NewServer(t, openaitest.JSON(503, `{"error":{"message":"the engine is overloaded","type":"server_error"}}`))
	up := openaitest.NewServer(t, openaitest.Text("Hello from the backup."))
	mk := func(s *openaitest.Server, model string) provider.Provider {
		p, err := openai.New(openai.WithModel(model), openai.WithAPIKey("k"),
			openai.WithBaseURL(s.BaseURL()), openai.WithHTTPClient(s.Client()), openai.WithMaxRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p, err := fallback.New([]provider.Provider{mk(down, "primary"), mk(up, "backup")})
	if err != nil {
		t.Fatal(err)
	}
	r := &provider.Request{Turns: []ledger.Turn{{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "hi"}}}}}
	arts, err := collect(p.Invoke(context.Background(), r))
	if err != nil {
		t.Fatal(err)
	}
	var text []artifact.Artifact
	for _, a := range arts {
		if _, ok := a.(artifact.Text); ok {
			text = append(text, a)
		}
	}
	if want := []artifact.Artifact{artifact.Text{Content: "Hello from the backup."}}; !reflect.DeepEqual(text, want) {
		t.Errorf("answer = %#v", arts)
	}
	if n := len(down.Requests()); n != 1 {
		t.Errorf("the failing server got %d requests", n)
	}
	reqs := up.Requests()
	if len(reqs) != 1 || reqs[0].Body["model"] != "backup" {
		t.Fatalf("the backup got %v", reqs)
	}
	if !reflect.DeepEqual(reqs[0].Body["messages"], down.Requests()[0].Body["messages"]) {
		t.Errorf("the two servers got different messages")
	}
}

// Both servers fail: the error holds both, and each adapter error is
// found.
func TestTwoServersDown(t *testing.T) {
	a := openaitest.NewServer(t, openaitest.JSON(503, `{"error":{"message":"down"}}`))
	b := openaitest.NewServer(t, openaitest.JSON(429, `{"error":{"message":"slow down"}}`))
	var provs []provider.Provider
	for _, s := range []*openaitest.Server{a, b} {
		p, err := openai.New(openai.WithModel("m"), openai.WithAPIKey("k"),
			openai.WithBaseURL(s.BaseURL()), openai.WithHTTPClient(s.Client()), openai.WithMaxRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		provs = append(provs, p)
	}
	p, _ := fallback.New(provs)
	_, err := collect(p.Invoke(context.Background(), &provider.Request{Turns: []ledger.Turn{
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "hi"}}},
	}}))
	if !errors.Is(err, openai.ErrServer) || !errors.Is(err, openai.ErrRateLimited) || !errors.Is(err, fallback.ErrExhausted) {
		t.Fatalf("err = %v", err)
	}
	var ae *openai.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 503 {
		t.Errorf("errors.As finds %v first", ae)
	}
}
