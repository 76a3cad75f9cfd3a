package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lodeworks/lode/tool"
)

// WeatherIn is what the model must send; the schema the model sees is
// reflected from it, tags and all.
type WeatherIn struct {
	City  string `json:"city" jsonschema:"description=The city to report on"`
	Units string `json:"units,omitempty" jsonschema:"enum=celsius,enum=fahrenheit"`
}

// A typed Go function becomes a tool: its schema comes from the input
// struct, and the model's arguments are checked against it before the
// function runs.
func ExampleRegisterFunc() {
	reg := tool.NewRegistry()
	err := tool.RegisterFunc(reg, "weather", "Current weather for a city",
		func(ctx context.Context, in WeatherIn) (string, error) {
			if in.Units == "" {
				in.Units = "celsius"
			}
			return fmt.Sprintf("12 degrees %s in %s", in.Units, in.City), nil
		})
	if err != nil {
		fmt.Println("error:", err)
		return
	}

	t := reg.Tools()[0]
	fmt.Println(t.Name, "-", t.Description)
	var schema bytes.Buffer
	_ = json.Indent(&schema, t.Schema, "", "  ")
	fmt.Println(schema.String())

	// What the loop's handler does with a model's tool call.
	b, _ := reg.Lookup("weather")
	out, err := b.Call(context.Background(), tool.NoSandbox(), `{"city":"Oslo"}`)
	fmt.Println(out, err)

	_, err = b.Call(context.Background(), tool.NoSandbox(), `{"city":"Oslo","units":"kelvin"}`)
	var argErr *tool.ArgumentsError
	fmt.Println(errors.As(err, &argErr), err)
	// Output:
	// weather - Current weather for a city
	// {
	//   "properties": {
	//     "city": {
	//       "type": "string",
	//       "description": "The city to report on"
	//     },
	//     "units": {
	//       "type": "string",
	//       "enum": [
	//         "celsius",
	//         "fahrenheit"
	//       ]
	//     }
	//   },
	//   "additionalProperties": false,
	//   "type": "object",
	//   "required": [
	//     "city"
	//   ]
	// }
	// 12 degrees celsius in Oslo <nil>
	// true invalid arguments for weather: arguments do not match the schema: validating root: validating /properties/units: enum: kelvin does not equal any of: [celsius fahrenheit]
}
