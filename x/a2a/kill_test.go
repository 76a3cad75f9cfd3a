package a2a_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	lodea2a "github.com/lodeworks/lode/x/a2a"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// TestMain runs the test binary as a lode A2A server when the kill tests
// start it so: a process of its own, which they SIGKILL.
func TestMain(m *testing.M) {
	if mode := os.Getenv("LODE_A2A_TEST_SERVER"); mode != "" {
		os.Exit(serveForKill(mode))
	}
	os.Exit(m.Run())
}

// serveForKill serves an agent over the file store LODE_A2A_TEST_STORE
// whose model does what mode says, after recovering what a killed process
// left; delete_ticket, which waits for approval, appends a line to
// LODE_A2A_TEST_MARK each time it runs.
func serveForKill(mode string) int {
	store, err := file.Open(os.Getenv("LODE_A2A_TEST_STORE"))
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	var prov *script.Provider
	switch mode {
	case "hang":
		prov = script.Play(script.Hang(artifact.Text{Content: "partial "}))
	case "call":
		prov = script.Play(script.Call("c1", "delete_ticket", `{"id":7}`))
	default:
		prov = script.Play(script.Text("recovered answer"))
	}
	reg := tool.NewRegistry()
	_ = reg.Register(tool.Tool{Name: "delete_ticket"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		f, err := os.OpenFile(os.Getenv("LODE_A2A_TEST_MARK"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		_, err = f.WriteString("ran\n")
		return "deleted", err
	})
	needs := func(context.Context, tool.Tool, artifact.ToolCall) (string, bool) { return "cannot be undone", true }
	srv, err := lodea2a.NewServer(prov, store, lodea2a.WithLoopOptions(
		loop.WithHandlers(xtool.NewHandler(reg, xtool.WithApprover(xtool.PauseForDecision), xtool.WithApprovalRule(needs))),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
	))
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	done, err := srv.Recover(ctx)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Printf("listening http://%s recovered %d\n", ln.Addr(), len(done))
	_ = srv.Serve(ctx, ln)
	return 0
}

// killable is a server process a test can SIGKILL.
type killable struct {
	cmd       *exec.Cmd
	url       string
	recovered string
}

func startProcess(t *testing.T, mode, dir string) *killable {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LODE_A2A_TEST_SERVER="+mode, "LODE_A2A_TEST_STORE="+filepath.Join(dir, "store"),
		"LODE_A2A_TEST_MARK="+filepath.Join(dir, "mark"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	k := &killable{cmd: cmd}
	t.Cleanup(k.kill)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the server process said nothing: %v", err)
	}
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "listening" {
		t.Fatalf("the server process said %q", line)
	}
	k.url, k.recovered = f[1], f[3]
	return k
}

func (k *killable) kill() {
	if k.cmd.ProcessState == nil {
		_ = k.cmd.Process.Signal(syscall.SIGKILL)
		_ = k.cmd.Wait()
	}
}

func TestTaskSurvivesSIGKILLMidTurn(t *testing.T) {
	dir := t.TempDir()
	first := startProcess(t, "hang", dir)
	c := connect(t, first.url, "")
	ctx, stop := context.WithCancel(t.Context())
	var id a2a.TaskID
	for ev, err := range c.SendStreamingMessage(ctx, userText("a long job")) {
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
			id = a.TaskID
			break
		}
	}
	stop()
	if id == "" {
		t.Fatal("the task never streamed")
	}
	first.kill()

	second := startProcess(t, "answer", dir)
	if second.recovered != "1" {
		t.Fatalf("the restarted server recovered %s task(s), want 1", second.recovered)
	}
	task, err := connect(t, second.url, "").GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != a2a.TaskStateCompleted || artifactText(task) != "recovered answer" {
		t.Fatalf("after the restart: %s %q", task.Status.State, artifactText(task))
	}
}

func TestTaskSurvivesSIGKILLWhileInputRequired(t *testing.T) {
	dir := t.TempDir()
	first := startProcess(t, "call", dir)
	task := send(t, connect(t, first.url, ""), userText("delete ticket 7"))
	pendingIDs(t, task)
	first.kill()

	second := startProcess(t, "answer", dir)
	if second.recovered != "0" {
		t.Fatalf("recovered %s task(s); a task waiting for input needs no recovery", second.recovered)
	}
	c := connect(t, second.url, "")
	done := send(t, c, answerTo(task, a2a.NewTextPart("approve")))
	if done.Status.State != a2a.TaskStateCompleted || artifactText(done) != "recovered answer" {
		t.Fatalf("after the restart and approval: %s %q (%s)", done.Status.State, artifactText(done), statusText(done))
	}
	mark, _ := os.ReadFile(filepath.Join(dir, "mark"))
	if got := strings.Count(string(mark), "ran"); got != 1 {
		t.Fatalf("the approved call ran %d times, want 1", got)
	}
	if _, err := c.SendMessage(t.Context(), answerTo(task, a2a.NewTextPart("approve"))); err == nil {
		t.Fatal("a second approval was taken")
	}
}
