package artifact_test

import (
	"fmt"
	"reflect"

	"github.com/lodeworks/lode/artifact"
)

// Every artifact encodes with its kind, so a ledger can store a mixed
// history and read each one back as the type it was.
func ExampleUnmarshal() {
	history := []artifact.Artifact{
		artifact.Text{Content: "Checking the weather."},
		artifact.ToolCall{ID: "c1", Name: "weather", Arguments: `{"city":"Oslo"}`},
		artifact.ToolResult{ToolCallID: "c1", Name: "weather", Content: "12 degrees"},
	}
	for _, a := range history {
		data, err := artifact.Marshal(a)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		back, err := artifact.Unmarshal(data)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Printf("%s\n  %T equal=%v\n", data, back, reflect.DeepEqual(back, a))
	}

	// A kind from a newer lode is kept as it came, not dropped.
	u, _ := artifact.Unmarshal([]byte(`{"kind":"hologram","frames":3}`))
	again, _ := artifact.Marshal(u)
	fmt.Printf("%T %s %s\n", u, u.Kind(), again)
	// Output:
	// {"kind":"text","content":"Checking the weather."}
	//   artifact.Text equal=true
	// {"kind":"tool_call","id":"c1","name":"weather","arguments":"{\"city\":\"Oslo\"}"}
	//   artifact.ToolCall equal=true
	// {"kind":"tool_result","tool_call_id":"c1","name":"weather","content":"12 degrees"}
	//   artifact.ToolResult equal=true
	// artifact.Unknown hologram {"kind":"hologram","frames":3}
}
