package tool_test

import (
	"context"
	"testing"

	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

func TestOffered(t *testing.T) {
	if tools, ok := xtool.Offered(context.Background()); ok || tools != nil {
		t.Errorf("no restriction: got %v, %v", tools, ok)
	}
	ctx := xtool.WithOffered(context.Background(), []tool.Tool{{Name: "a"}})
	if tools, ok := xtool.Offered(ctx); !ok || len(tools) != 1 || tools[0].Name != "a" {
		t.Errorf("WithOffered: got %v, %v", tools, ok)
	}
}
