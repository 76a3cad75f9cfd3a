package history_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/history"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// Blocks of ten turns keep the request's prefix for five questions at a
// time; a CacheWatch reports the turn whose server lost the cache anyway.
func ExampleWithBlocks() {
	pol, err := history.New(history.WithBudget(300), history.WithBlocks(10))
	if err != nil {
		fmt.Println(err)
		return
	}
	var steps []script.Step
	for i := range 30 {
		cached := int64(400)
		if i == 22 {
			cached = 0 // the server's cache was evicted
		}
		steps = append(steps, script.Reply(artifact.Text{Content: "noted " + strings.Repeat(".", 40)},
			artifact.Usage{InputTokens: 500, CachedInputTokens: cached}))
	}
	model := script.New(steps)
	step := loop.New(loop.WithHandlers(history.NewCacheWatch()),
		loop.WithObserver(loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
			if l, ok := ev.(history.CacheLostEvent); ok {
				fmt.Printf("turn %d read %d tokens from the cache, %d before\n", l.Turn, l.Cached, l.Previous)
			}
		})))
	th := ledger.NewThread()
	for i := range 30 {
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: fmt.Sprintf("note %02d %s", i, strings.Repeat(".", 40))})
		if _, err := step.Turn(context.Background(), th, model, pol); err != nil {
			fmt.Println(err)
			return
		}
	}
	_ = step.Flush(context.Background())
	changes := 0
	reqs := model.Requests()
	for i := 1; i < len(reqs); i++ {
		if !sharesPrefix(reqs[i-1].Turns, reqs[i].Turns) {
			changes++
		}
	}
	fmt.Println("requests:", len(reqs), "prefix changes:", changes)
	// Output:
	// turn 45 read 0 tokens from the cache, 400 before
	// requests: 30 prefix changes: 5
}

// The recall tools answer from the turns a summary stands for; the filter
// offers them only on a thread that has a summary.
func ExampleRegisterRecall() {
	reg := tool.NewRegistry()
	if err := history.RegisterRecall(reg); err != nil {
		fmt.Println(err)
		return
	}
	th := ledger.NewThread(ledger.WithTurns(
		text(ledger.RoleUser, "Hello."),
		text(ledger.RoleAssistant, "Hi."),
		text(ledger.RoleUser, "My locker code is 4417."),
		text(ledger.RoleAssistant, "Noted."),
		ledger.Turn{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{
			artifact.Summary{Content: "The user gave a locker code.", First: 1, Last: 3}}},
		text(ledger.RoleUser, "What was my locker code?"),
	))
	model := script.Play(
		script.Call("c1", history.RecallSearchTool, `{"query":"locker code"}`),
		script.Text("4417."),
	)
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)))
	if _, err := step.Run(context.Background(), th, model, xtool.WithFilteredTools(reg, history.RecallFilter(nil))); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(th.Turns()[7].Artifacts[0].(artifact.ToolResult).Content)
	// Output:
	// 1 of the turns from 1 to 3 match (show one with recall_turn):
	// turn 2 (user): My locker code is 4417.
}
