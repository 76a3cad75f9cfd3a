package a2a_test

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	lodea2a "github.com/lodeworks/lode/x/a2a"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// upper is a remote agent that answers in capitals.
type upper struct{}

func (upper) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		text := ""
		for _, p := range ec.Message.Parts {
			text += p.Text()
		}
		out := []rune(text)
		for i, r := range out {
			if r >= 'a' && r <= 'z' {
				out[i] = r - 'a' + 'A'
			}
		}
		yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(string(out))), nil)
	}
}

func (upper) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// A remote A2A agent (here an a2a-go server on loopback) mounted as a
// tool source: each skill of its card is a tool, and the model's call is
// a remote task whose answer the thread marks untrusted.
func ExampleMount() {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(&a2a.AgentCard{
		Name:                "Shouter",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srv.URL+"/rpc", a2a.TransportProtocolJSONRPC)},
		Skills:              []a2a.AgentSkill{{ID: "shout", Name: "Shout", Description: "Says a text in capitals."}},
	}))
	mux.Handle("/rpc", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(upper{})))

	ctx := context.Background()
	reg := tool.NewRegistry()
	remote, err := lodea2a.Mount(ctx, reg, srv.URL, lodea2a.WithName("shouter"), lodea2a.WithReadOnly())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer remote.Close()
	for _, t := range reg.Tools() {
		fmt.Println("tool:", t.Name)
	}

	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)))
	prov := script.Play(script.Call("call_1", "shouter__shout", `{"task":"hello there"}`), script.Text("Done."))
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Shout hello."})
	if _, err := step.Run(ctx, th, prov); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("answer:", th.Turns()[2].Artifacts[0].(artifact.ToolResult).Content)
	_, untrusted := ledger.HasLabel(th, ledger.LabelUntrusted)
	fmt.Println("untrusted:", untrusted)
	// Output:
	// tool: shouter__shout
	// answer: HELLO THERE
	// untrusted: true
}
