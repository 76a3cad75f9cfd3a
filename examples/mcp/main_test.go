package main

import (
	"context"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out, nil); err != nil {
		t.Fatal(err)
	}
	want := "mounted: remote__calculator__eval\nthe MCP server answered: 1024/3 ≈ 341.33333333333333333\n"
	if out.String() != want {
		t.Fatalf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}
