package openaitest_test

import (
	"context"
	"fmt"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/openai"
	"github.com/lodeworks/lode/x/provider/openai/openaitest"
)

// exampleT stands in for the *testing.T a test passes.
type exampleT struct{ cleanups []func() }

func (*exampleT) Helper()                           {}
func (*exampleT) Errorf(format string, args ...any) { fmt.Printf("error: "+format+"\n", args...) }
func (t *exampleT) Cleanup(f func())                { t.cleanups = append(t.cleanups, f) }

// A test drives the openai adapter with canned replies, then reads what
// the adapter sent.
func Example() {
	t := &exampleT{}
	defer func() {
		for _, f := range t.cleanups {
			f()
		}
	}()
	srv := openaitest.NewServer(t,
		openaitest.Call("call_1", "weather", `{"city":"Oslo"}`),
		openaitest.Text("It is raining in Oslo."),
	)
	p, err := openai.New(openai.WithModel("gpt-test"),
		openai.WithBaseURL(srv.BaseURL()), openai.WithHTTPClient(srv.Client()))
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &provider.Request{Turns: []ledger.Turn{
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "Weather in Oslo?"}}},
	}}
	for range 2 {
		for a, err := range p.Invoke(context.Background(), req) {
			if err != nil {
				fmt.Println(err)
				return
			}
			switch a := a.(type) {
			case artifact.ToolCall:
				fmt.Println("call:", a.Name, a.Arguments)
			case artifact.Text:
				fmt.Println("text:", a.Content)
			}
		}
	}
	for _, r := range srv.Requests() {
		fmt.Println(r.Path, r.Body["model"])
	}
	// Output:
	// call: weather {"city":"Oslo"}
	// text: It is raining in Oslo.
	// /v1/chat/completions gpt-test
	// /v1/chat/completions gpt-test
}
