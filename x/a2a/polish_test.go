package a2a_test

import (
	"context"
	"errors"
	"strings"

	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	lodea2a "github.com/lodeworks/lode/x/a2a"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

func TestCancelWhileWaitingDeniesTheCallsAtOnce(t *testing.T) {
	prov := script.Play(script.Call("c1", "delete_ticket", `{"id":7}`), script.Text("unused"))
	ag := startAgent(t, prov, agentOpts{})
	c := connect(t, ag.url, "")
	task := send(t, c, userText("delete ticket 7"))
	pendingIDs(t, task)
	if got, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID}); err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel: %v %v", got, err)
	}
	st, err := ag.store.Load(t.Context(), lodea2a.ContextPrefix+task.ContextID)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if p := loop.Pending(st); len(p) != 0 {
		t.Fatalf("after the cancel %d call(s) still wait", len(p))
	}
	if w, _ := st.Metadata(lodea2a.WaitingKey); w != "" {
		t.Errorf("%s = %q after the cancel, want empty", lodea2a.WaitingKey, w)
	}
	turns := st.Turns()
	last := turns[len(turns)-1]
	if last.Role != ledger.RoleTool || len(last.Artifacts) != 2 {
		t.Fatalf("last turn %s with %d artifacts, want the tool turn of a decision and its result", last.Role, len(last.Artifacts))
	}
	d, ok := last.Artifacts[0].(artifact.Decision)
	if !ok || d.ToolCallID != "c1" || d.Approved || d.Name != "delete_ticket" || d.By != "a2a" || d.Reason != "the task was cancelled before a decision" {
		t.Errorf("decision %#v", last.Artifacts[0])
	}
	r, ok := last.Artifacts[1].(artifact.ToolResult)
	want := "the call to delete_ticket was denied by the person approving tool calls; it did not run. Their reason: the task was cancelled before a decision"
	if !ok || r.ToolCallID != "c1" || !r.IsError || r.Content != want {
		t.Errorf("result %#v", last.Artifacts[1])
	}
	if n := len(prov.Requests()); n != 1 {
		t.Errorf("the model was asked %d times, want 1: denying on cancel runs no turn", n)
	}
	if n := ag.deletes.Load(); n != 0 {
		t.Errorf("delete ran %d times", n)
	}
}

// usageOf reads MetaUsage off a task's metadata.
func usageOf(t *testing.T, task *a2a.Task) map[string]any {
	t.Helper()
	u, ok := task.Metadata[lodea2a.MetaUsage].(map[string]any)
	if !ok {
		t.Fatalf("task metadata %v has no %s", task.Metadata, lodea2a.MetaUsage)
	}
	return u
}

func TestServerReportsUsageWithItsModel(t *testing.T) {
	used := func(in, out int64) artifact.Usage { return artifact.Usage{InputTokens: in, OutputTokens: out} }
	prov := script.New([]script.Step{
		script.Reply(artifact.ToolCall{ID: "c1", Name: "delete_ticket", Arguments: `{"id":7}`}, used(100, 10)),
		script.Reply(artifact.Text{Content: "deleted"}, used(150, 20)),
	}, script.WithModel("remote-model"))
	ag := startAgent(t, prov, agentOpts{})
	c := connect(t, ag.url, "")
	task := send(t, c, userText("delete ticket 7"))
	u := usageOf(t, task)
	if u["model"] != "remote-model" || u["input_tokens"] != float64(100) || u["output_tokens"] != float64(10) {
		t.Errorf("usage while waiting: %v", u)
	}
	done := send(t, c, answerTo(task, a2a.NewTextPart("approve")))
	if done.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("state %s (%s)", done.Status.State, statusText(done))
	}
	// The task's whole cost: both answers, across the wait.
	u = usageOf(t, done)
	if u["model"] != "remote-model" || u["input_tokens"] != float64(250) || u["output_tokens"] != float64(30) {
		t.Errorf("usage at the end: %v", u)
	}
}

func TestLodeCallingLodeCountsRemoteSpend(t *testing.T) {
	remote := script.New([]script.Step{
		script.Reply(artifact.Text{Content: "ticket 7 is on fire"}, artifact.Usage{InputTokens: 5000, OutputTokens: 900}),
	}, script.WithModel("remote-model"))
	ag := startAgent(t, remote, agentOpts{})
	reg, _ := mount(t, ag.url, lodea2a.WithReadOnly())
	st := ledger.NewThread()
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "go"})
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
		loop.WithPricer(flatPrices{"m": 0, "remote-model": 1}), loop.WithMaxCost(0.5))
	prov := script.New([]script.Step{script.Call("call_1", "helpdesk__lookup", `{"task":"ticket 7?"}`), script.Text("done")}, script.WithModel("m"))
	_, err := step.Run(t.Context(), st, prov)
	var le *loop.LimitError
	if !errors.As(err, &le) || le.Limit != loop.LimitCost || le.UsedUSD != 1 {
		t.Fatalf("err %v, want the cost limit at $1", err)
	}
	if r := resultOf(t, st); r.IsError || r.Content != "ticket 7 is on fire" {
		t.Errorf("result %+v", r)
	}
}

func TestRemoteUsageWithoutModelStopsACostLimitedRun(t *testing.T) {
	meta := map[string]any{lodea2a.MetaUsage: map[string]any{"input_tokens": 120, "output_tokens": 30}}
	g := &goAgent{exec: answer("a", "b", meta)}
	url, _ := goServer(t, g, true, nil)
	reg, _ := mount(t, url, lodea2a.WithReadOnly())
	st := ledger.NewThread()
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "go"})
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
		loop.WithPricer(flatPrices{"m": 0}), loop.WithMaxCost(0.5))
	prov := script.New([]script.Step{script.Call("call_1", "echo_agent__summarise", `{"task":"x"}`), script.Text("done")}, script.WithModel("m"))
	_, err := step.Run(t.Context(), st, prov)
	want := `loop: the model has no price, so the cost limit cannot be kept: "a2a agent echo_agent (its usage names no model)" answered`
	if !errors.Is(err, loop.ErrUnpriced) || err.Error() != want {
		t.Fatalf("err %v, want %s", err, want)
	}
	if r := resultOf(t, st); r.IsError || r.Content != "ab" {
		t.Errorf("result %+v, want the answer: the call itself went well", r)
	}
}

// An agent that does not stream is asked to answer at once with its task,
// so that a cancelled turn can cancel the task.
func TestBlockingCallCancelledCancelsTheTask(t *testing.T) {
	g := &goAgent{exec: hang(nil)}
	url, seen := goServer(t, g, false, nil)
	ctx, cancel := context.WithCancel(t.Context())
	hc := &httpClientWatch{word: "TASK_STATE_WORKING", seen: cancel}
	_, r := mount(t, url, lodea2a.WithHTTPClient(hc.client()))
	_, err := r.Call(ctx, "summarise", map[string]any{"task": "a long job"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if n := g.cancels.Load(); n != 1 {
		t.Errorf("the remote got %d cancels, want 1", n)
	}
	if body := seen.allBodies(); !strings.Contains(body, `"returnImmediately":true`) || !strings.Contains(body, `"method":"CancelTask"`) {
		t.Errorf("requests:\n%s", body)
	}
}

func TestBlockingCallPollsToTheAnswer(t *testing.T) {
	meta := map[string]any{lodea2a.MetaUsage: map[string]any{"input_tokens": 3, "output_tokens": 4, "model": "remote-model"}}
	g := &goAgent{exec: answer("half ", "and half", meta)}
	url, _ := goServer(t, g, false, nil)
	_, r := mount(t, url)
	v, err := r.Call(t.Context(), "summarise", map[string]any{"task": "x"})
	if err != nil {
		t.Fatal(err)
	}
	res := v.(tool.Result)
	ans := res.Value.(*lodea2a.Answer)
	if res.IsError || res.Content != "half and half" || ans.State != string(a2a.TaskStateCompleted) || ans.Usage == nil || ans.Usage.OutputTokens != 4 {
		t.Fatalf("result %+v, answer %+v", res, ans)
	}
}

func TestListTasksPages(t *testing.T) {
	prov := script.Play(script.Text("1"), script.Text("2"), script.Text("3"), script.Text("4"), script.Text("5"))
	ag := startAgent(t, prov, agentOpts{})
	c := connect(t, ag.url, "")
	made := map[a2a.TaskID]bool{}
	for range 5 {
		made[send(t, c, userText("hi")).ID] = true
	}
	listed := map[a2a.TaskID]bool{}
	token := ""
	var sizes []int
	for page := 0; ; page++ {
		if page == 5 {
			t.Fatal("paging does not end")
		}
		resp, err := c.ListTasks(t.Context(), &a2a.ListTasksRequest{PageSize: 2, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		if resp.TotalSize != 5 || resp.PageSize != 2 {
			t.Errorf("page %d: totalSize %d, pageSize %d", page, resp.TotalSize, resp.PageSize)
		}
		sizes = append(sizes, len(resp.Tasks))
		for _, task := range resp.Tasks {
			if listed[task.ID] {
				t.Errorf("task %s listed twice", task.ID)
			}
			listed[task.ID] = true
		}
		if token = resp.NextPageToken; token == "" {
			break
		}
	}
	if len(sizes) != 3 || sizes[0] != 2 || sizes[1] != 2 || sizes[2] != 1 {
		t.Errorf("pages of %v, want [2 2 1]", sizes)
	}
	for id := range made {
		if !listed[id] {
			t.Errorf("task %s never listed", id)
		}
	}
}

func TestListTasksRefusesBadPaging(t *testing.T) {
	ag := startAgent(t, script.Play(), agentOpts{})
	c := connect(t, ag.url, "")
	for _, tc := range []struct {
		name string
		req  *a2a.ListTasksRequest
		want string
	}{
		{"page too big", &a2a.ListTasksRequest{PageSize: 101}, "a2a: pageSize 101: ask for 1 to 100 tasks (0: 50)"},
		{"negative page", &a2a.ListTasksRequest{PageSize: -1}, "a2a: pageSize -1: ask for 1 to 100 tasks (0: 50)"},
		{"forged token", &a2a.ListTasksRequest{PageToken: "a2a-ctx-x"}, `a2a: pageToken "a2a-ctx-x" is not one this agent gave: send the nextPageToken of the last page, or none for the first`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.ListTasks(t.Context(), tc.req)
			if !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want invalid params: %s", err, tc.want)
			}
		})
	}
}
