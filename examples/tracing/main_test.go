package main

import (
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"execute_tool weather       Unset  gen_ai.tool.name=weather gen_ai.tool.call.id=call_1 gen_ai.tool.type=function",
		"execute_tool weather       Error  gen_ai.tool.name=weather gen_ai.tool.call.id=call_2 gen_ai.tool.type=function error.type=tool_error",
		"execute_tool forecast      Error  gen_ai.tool.name=forecast gen_ai.tool.call.id=call_3 gen_ai.tool.type=function error.type=tool_not_found",
	}
	for i, w := range want {
		if strings.TrimSpace(lines[i]) != w {
			t.Errorf("line %d = %q\nwant     %q", i, lines[i], w)
		}
	}
}
