package cli

// TestExamplesAsWritten runs every `go run ./examples/...` line that an
// example's README.md or its main.go's doc comment gives, as written, from
// the repository's root, as a reader pastes it there. The rule, for whoever
// adds an example or a line:
//
//   - Each line must have an entry in exampleCommands, keyed by the line as
//     written (comment markers, indentation and a trailing " # …" comment
//     removed); a line with none fails the test, naming its file and line.
//   - An entry runs the line or says in skip why it cannot run here (it
//     serves until stopped, fetches software), naming the test that covers
//     it. Variables set before `go run` are set; those naming a model
//     server are pointed at the scripted OpenAI-wire fake.
//   - Lines of one file run in order in one folder of their own: a path
//     under /tmp and the placeholders DIR and WORK are folders there, and
//     THREAD is the thread an earlier line printed.

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// exampleCommand is how TestExamplesAsWritten runs one line.
type exampleCommand struct {
	// files are created, empty, in the line's folder (WORK) first.
	files []string
	// has is a piece of the output (stdout and stderr) the run must print.
	has  string
	skip string
}

var exampleCommands = map[string]exampleCommand{
	"go run ./examples/calculator":    {has: "1/(2 - 2) has no value."},
	"go run ./examples/extract":       {has: `"total":1250`},
	"go run ./examples/filesystem":    {has: "the path leads outside the root"},
	"go run ./examples/filtering":     {has: "close_ticket -> error=false: ticket 7 closed"},
	"go run ./examples/pack":          {has: "model: All echoed."},
	"go run ./examples/research":      {has: "== summarise (depth 2), started by call r2"},
	"go run ./examples/tracing":       {has: "error.type=tool_not_found"},
	"go run ./examples/evals":         {has: "builtin-packs: 13 passed, 0 failed, 0 skipped"},
	"go run ./examples/roles":         {has: "calculator__eval -> 42"},
	"go run ./examples/roles my.yaml": {has: "calculator__eval -> 42"},
	"go run ./examples/mcp":           {has: "the MCP server answered: 1024/3"},
	"go run ./examples/mcp npx -y @modelcontextprotocol/server-everything": {
		skip: "fetches the newest server-everything from npm; x/tool/mcp's interop tests mount the pinned one"},
	"OPENAI_API_KEY=... go run ./examples/embed":                                            {has: "Hello from the fake."},
	"OPENAI_BASE_URL=http://127.0.0.1:11434/v1 LODE_MODEL=llama3.1 go run ./examples/embed": {has: "Hello from the fake."},
	"OPENAI_API_KEY=... LODE_MODEL=gpt-4o-mini go run ./examples/webchat": {
		skip: "serves until stopped; examples/webchat's test drives its handler"},
	"OPENAI_BASE_URL=http://127.0.0.1:11434/v1 LODE_MODEL=llama3.1 go run ./examples/webchat": {
		skip: "serves until stopped; examples/webchat's test drives its handler"},
	"go run ./examples/approval -store /tmp/ledger -dir /tmp/work start": {
		files: []string{"old.log", "notes.txt"}, has: "call_b: delete_file"},
	"go run ./examples/approval -store /tmp/ledger -dir /tmp/work resume THREAD approve:call_a 'deny:call_b=keep my notes'": {has: "keep my notes"},
	"go run ./examples/approval -store DIR -dir WORK start": {
		files: []string{"old.log", "notes.txt"}, has: "call_b: delete_file"},
	"go run ./examples/approval -store DIR -dir WORK resume THREAD approve:call_a 'deny:call_b=keep it'": {has: "keep it"},
}

// exampleLine is one `go run ./examples/...` line of a file.
type exampleLine struct {
	file string
	line int
	cmd  string
}

var goRunExample = regexp.MustCompile(`(?:^|\s)go run \./examples/`)

// exampleLines are the lines of every example's README.md and main.go
// that run an example, grouped by file in the order they are written.
func exampleLines(t *testing.T, root string) map[string][]exampleLine {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "examples", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string][]exampleLine{}
	for _, f := range files {
		base := filepath.Base(f)
		if base != "README.md" && base != "main.go" {
			continue
		}
		rel, _ := filepath.Rel(root, f)
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for n := 1; sc.Scan(); n++ {
			s := sc.Text()
			if base == "main.go" {
				if !strings.HasPrefix(s, "//") {
					continue
				}
				s = strings.TrimPrefix(s, "//")
			}
			s = strings.TrimSpace(s)
			if i := strings.Index(s, " #"); i >= 0 {
				s = strings.TrimSpace(s[:i])
			}
			if !goRunExample.MatchString(s) || strings.HasPrefix(s, "`") {
				continue
			}
			lines[rel] = append(lines[rel], exampleLine{rel, n, s})
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return lines
}

func TestExamplesAsWritten(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	byFile := exampleLines(t, root)
	if len(byFile) == 0 {
		t.Fatal("no example gives a go run line")
	}
	seen := map[string]bool{}
	for _, lines := range byFile {
		for _, l := range lines {
			seen[l.cmd] = true
			if _, ok := exampleCommands[l.cmd]; !ok {
				t.Errorf("%s:%d: %q has no entry in exampleCommands (examples_test.go): add one that runs it, or says why it cannot", l.file, l.line, l.cmd)
			}
		}
	}
	for k := range exampleCommands {
		if !seen[k] {
			t.Errorf("exampleCommands has %q, which no example gives any more: remove it", k)
		}
	}
	if t.Failed() {
		return
	}
	// One build of every example, run below as `go run` runs it: from
	// the root.
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./examples/...")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/...: %v\n%s", err, out)
	}
	for file, lines := range byFile {
		t.Run(file, func(t *testing.T) {
			var replies []func(http.ResponseWriter, *http.Request)
			for range 2 * len(lines) {
				replies = append(replies, textReply("Hello from the fake."))
			}
			fake := httptest.NewServer(&fakeOpenAI{replies: replies})
			defer fake.Close()
			dir := t.TempDir()
			thread := ""
			for _, l := range lines {
				entry := exampleCommands[l.cmd]
				if entry.skip != "" {
					t.Logf("%s:%d: skipped: %s", l.file, l.line, entry.skip)
					continue
				}
				out := runExampleLine(t, root, bin, dir, fake.URL+"/v1", thread, l, entry)
				if !strings.Contains(out, entry.has) {
					t.Fatalf("%s:%d: %s: the output lacks %q:\n%s", l.file, l.line, l.cmd, entry.has, out)
				}
				if m := regexp.MustCompile(`thread ([0-9a-f]{32})`).FindStringSubmatch(out); m != nil {
					thread = m[1]
				}
			}
		})
	}
}

// runExampleLine runs one line with the example's binary from root, and
// returns what it printed; it fails the test unless the line exits 0.
func runExampleLine(t *testing.T, root, bin, dir, modelURL, thread string, l exampleLine, entry exampleCommand) string {
	t.Helper()
	words := shellWords(t, l.cmd)
	env := os.Environ()
	for len(words) > 0 && strings.Contains(words[0], "=") {
		k, _, _ := strings.Cut(words[0], "=")
		switch k {
		case "OPENAI_BASE_URL":
			env = append(env, k+"="+modelURL)
		case "OPENAI_API_KEY":
			env = append(env, k+"=sk-example-test")
		default:
			env = append(env, words[0])
		}
		words = words[1:]
	}
	env = append(env, "OPENAI_BASE_URL="+modelURL) // a key alone would reach the real server
	if len(words) < 3 || words[0] != "go" || words[1] != "run" {
		t.Fatalf("%s:%d: %q is not a go run line", l.file, l.line, l.cmd)
	}
	name := filepath.Base(words[2])
	work := filepath.Join(dir, "work")
	fill := strings.NewReplacer("/tmp/ledger", filepath.Join(dir, "ledger"), "/tmp/work", work,
		"DIR", filepath.Join(dir, "ledger"), "WORK", work, "THREAD", thread, "my.yaml", filepath.Join(dir, "my.yaml"))
	args := make([]string, 0, len(words)-3)
	for _, w := range words[3:] {
		args = append(args, fill.Replace(w))
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range entry.files {
		if err := os.WriteFile(filepath.Join(work, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if name == "roles" && len(args) == 1 {
		// "your copy": the example's own policy, copied.
		b, err := os.ReadFile(filepath.Join(root, "examples", "roles", "policy.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(args[0], b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A bound on a line that hangs, never a measure of speed.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
	cmd.Dir = root
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s:%d: %s: %v\n%s", l.file, l.line, l.cmd, err, out)
	}
	return string(out)
}
