package mcp_test

import (
	"context"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// A tool's progress reports reach the observers of the loop turn that
// called it, with or without a WithNotifications callback; one the
// observers received does not reach the callback too. The reports sent
// well before the result are checked; the last one races the result and
// may land after the turn, where only the callback can get it.
func TestProgressReachesObserversEverything(t *testing.T) {
	for _, withCallback := range []bool{false, true} {
		t.Run(map[bool]string{false: "no callback", true: "callback"}[withCallback], func(t *testing.T) {
			testProgressReachesObservers(t, withCallback)
		})
	}
}

func testProgressReachesObservers(t *testing.T, withCallback bool) {
	var (
		mu        sync.Mutex
		got       []mcp.Notification
		callbacks []mcp.Notification
	)
	var opts []mcp.Option
	if withCallback {
		opts = append(opts, mcp.WithNotifications(func(_ context.Context, n mcp.Notification) {
			mu.Lock()
			callbacks = append(callbacks, n)
			mu.Unlock()
		}))
	}
	reg := everything(t, opts...)
	obs := loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
		if n, ok := ev.(mcp.Notification); ok && n.Kind == mcp.NotifyProgress {
			mu.Lock()
			got = append(got, n)
			mu.Unlock()
		}
	})
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithObserver(obs), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)))
	prov := script.Play(
		script.Call("c1", "everything__trigger-long-running-operation", `{"duration":0.9,"steps":3}`),
		script.Text("done"),
	)
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "go"})
	if _, err := step.Run(context.Background(), th, prov); err != nil {
		t.Fatal(err)
	}
	if err := step.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if r := th.Turns()[2].Artifacts[0].(artifact.ToolResult); r.IsError {
		t.Fatalf("trigger-long-running-operation: %s", r.Content)
	}
	if len(got) < 2 {
		t.Fatalf("observer saw %d progress notifications, want at least 2: %+v", len(got), got)
	}
	for i, n := range got[:2] {
		want := mcp.Notification{Server: "everything", Kind: mcp.NotifyProgress, Tool: "trigger-long-running-operation", Progress: float64(i + 1), Total: 3}
		n.Message = ""
		if n != want {
			t.Fatalf("notification %d: %+v, want %+v", i, n, want)
		}
	}
	for _, cb := range callbacks {
		for _, n := range got {
			if cb.Kind == mcp.NotifyProgress && cb.Progress == n.Progress {
				t.Errorf("progress %v reached both the observer and the callback", n.Progress)
			}
		}
	}
}
