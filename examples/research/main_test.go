package main

import (
	"context"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	want := `== question
user: What did generics bring to Go?
assistant: research({"task":"What did generics bring to Go?"})
tool: The sources say: Go 1.18 added type parameters, so functions and types can be written once for many types.
assistant: Report: The sources say: Go 1.18 added type parameters, so functions and types can be written once for many types.
  == research (depth 1), started by call c1
  user: What did generics bring to Go?
  assistant: search({"query":"generics"})
  tool: Go 1.18 added type parameters, so functions and types can be written once for many types. Constraints are interfaces that list what a type must support.
  assistant: summarise({"task":"Summarise: Go 1.18 added type parameters, so functions and types can be written once for many types. Constraints are interfaces that list what a type must support."})
  tool: Go 1.18 added type parameters, so functions and types can be written once for many types.
  assistant: The sources say: Go 1.18 added type parameters, so functions and types can be written once for many types.
    == summarise (depth 2), started by call r2
    system: Summarise the text in one sentence.
    user: Summarise: Go 1.18 added type parameters, so functions and types can be written once for many types. Constraints are interfaces that list what a type must support.
    assistant: Go 1.18 added type parameters, so functions and types can be written once for many types.
`
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}
