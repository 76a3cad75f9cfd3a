package toolsearch_test

import (
	"context"
	"fmt"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/toolsearch"
)

type city struct {
	City string `json:"city"`
}

func Example() {
	reg := tool.NewRegistry()
	_ = tool.RegisterFunc(reg, "weather_now", "Current weather in a city.", func(_ context.Context, in city) (string, error) {
		return "sunny in " + in.City, nil
	})
	_ = tool.RegisterFunc(reg, "clock", "Tell the time.", func(context.Context, struct{}) (string, error) { return "noon", nil })
	s, err := toolsearch.New(reg, toolsearch.Defer("weather_now"))
	if err != nil {
		panic(err)
	}
	prov := script.Play(
		script.Call("1", "tool_search", `{"query":"weather in a city"}`),
		script.Call("2", "weather_now", `{"city":"Lyon"}`),
		script.Text("It is sunny."),
	)
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, s.Filter())))
	st := ledger.NewThread()
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "Weather in Lyon?"})
	if _, err := step.Run(context.Background(), st, prov); err != nil {
		panic(err)
	}
	for i, req := range prov.Requests() {
		fmt.Print("request ", i+1, " offers")
		for _, t := range req.Tools {
			fmt.Print(" ", t.Name)
		}
		fmt.Println()
	}
	fmt.Println(st.Turns()[2].Artifacts[0].(artifact.ToolResult).Content)
	meta, _ := st.Metadata(toolsearch.MetaKey)
	fmt.Println(meta)
	// Output:
	// request 1 offers clock tool_search
	// request 2 offers clock tool_search weather_now
	// request 3 offers clock tool_search weather_now
	// Tools that match; they are loaded, and you can call them from your next answer:
	// - weather_now: Current weather in a city.
	// [{"tool":"weather_now","at":2}]
}
