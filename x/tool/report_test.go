package tool_test

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"testing"

	"github.com/lodeworks/lode/artifact"
	toolpkg "github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

type recordingReporter struct{ got []string }

func (r *recordingReporter) Progress(_ context.Context, done, total float64, message string) {
	r.got = append(r.got, fmt.Sprintf("progress %g/%g %s", done, total, message))
}

func (r *recordingReporter) Log(_ context.Context, level slog.Level, message string) {
	r.got = append(r.got, fmt.Sprintf("log %s %s", level, message))
}

// What a tool reports reaches the Reporter of the context its call runs
// in, through the Handler; with none, or a nil one, it goes nowhere.
func TestToolReports(t *testing.T) {
	reg := toolpkg.NewRegistry()
	err := reg.Register(toolpkg.Tool{Name: "work", Description: "Works"}, func(ctx context.Context, _ toolpkg.Sandbox, _ map[string]any) (any, error) {
		xtool.Progress(ctx, 1, 2, "half")
		xtool.Log(ctx, slog.LevelWarn, "careful")
		xtool.Progress(ctx, 2, 0, "")
		return "ok", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h := xtool.NewHandler(reg)
	cases := []struct {
		name string
		ctx  func(*recordingReporter) context.Context
		want []string
	}{
		{"reporter", func(r *recordingReporter) context.Context { return xtool.WithReporter(context.Background(), r) },
			[]string{"progress 1/2 half", "log WARN careful", "progress 2/0 "}},
		{"none", func(*recordingReporter) context.Context { return context.Background() }, nil},
		{"nil", func(*recordingReporter) context.Context { return xtool.WithReporter(context.Background(), nil) }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &recordingReporter{}
			res := h.Execute(tc.ctx(r), artifact.ToolCall{ID: "1", Name: "work", Arguments: "{}"})
			if res.IsError {
				t.Fatalf("call failed: %s", res.Content)
			}
			if !reflect.DeepEqual(r.got, tc.want) {
				t.Fatalf("reported %q, want %q", r.got, tc.want)
			}
		})
	}
}
