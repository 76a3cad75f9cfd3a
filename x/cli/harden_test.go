package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/x/provider/openai"
)

// silentReply accepts the request and never answers, until the client
// goes away.
func silentReply(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// oneChunkThenStall sends the first chunk of an answer and then nothing.
func oneChunkThenStall(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: %s\n\n", chunk(`{"role":"assistant","content":"Thinking very hard"}`, ""))
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

func TestRunTimeLimit(t *testing.T) {
	const want = "lode: the run took longer than its time limit of 300ms (--timeout, or model.timeout in lode.yaml) and was stopped\n"
	cases := []struct {
		name   string
		reply  func(http.ResponseWriter, *http.Request)
		config string
		args   []string
	}{
		{"flag, server never answers", silentReply, "", []string{"run", "--timeout", "300ms", "hi"}},
		{"flag, server stalls after a chunk", oneChunkThenStall, "", []string{"run", "--timeout", "300ms", "hi"}},
		{"lode.yaml", silentReply, "model:\n  timeout: 300ms\n", []string{"run", "hi"}},
		{"the flag over lode.yaml", silentReply, "model:\n  timeout: 1h\n", []string{"run", "--timeout", "300ms", "hi"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){tc.reply}})
			defer srv.Close()
			dir := t.TempDir()
			if tc.config != "" {
				dir = writeConfig(t, tc.config)
			}
			r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": srv.URL, "LODE_MODEL": "m"}, "", tc.args...)
			if r.code != 1 || r.stderr != want {
				t.Fatalf("exit %d, stderr %q; want 1, %q", r.code, r.stderr, want)
			}
		})
	}
}

func TestChatTimeLimitEndsTheTurnNotTheChat(t *testing.T) {
	srv := httptest.NewServer(&fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){silentReply, textReply("Here now.")}})
	defer srv.Close()
	r := lode(t, t.TempDir(), map[string]string{"OPENAI_BASE_URL": srv.URL}, "first\nsecond\n", "chat", "--model", "m", "--timeout", "300ms")
	if r.code != 0 || r.stdout != "Here now.\n" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "you> lode: the run took longer than its time limit of 300ms (--timeout, or model.timeout in lode.yaml) and was stopped\nyou> ") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

func TestIdleTimeout(t *testing.T) {
	cases := []struct {
		name   string
		reply  func(http.ResponseWriter, *http.Request)
		config string
		args   []string
		limit  string
	}{
		{"flag, server never answers", silentReply, "", []string{"run", "--idle-timeout", "300ms", "hi"}, "300ms"},
		{"flag, server stalls after a chunk", oneChunkThenStall, "", []string{"run", "--idle-timeout", "300ms", "hi"}, "300ms"},
		{"lode.yaml", oneChunkThenStall, "model:\n  idle_timeout: 250ms\n", []string{"run", "hi"}, "250ms"},
		{"the flag over lode.yaml", silentReply, "model:\n  idle_timeout: 1h\n", []string{"run", "--idle-timeout", "300ms", "hi"}, "300ms"},
		{"the idle limit within a longer run limit", silentReply, "", []string{"run", "--idle-timeout", "300ms", "--timeout", "1h", "hi"}, "300ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){tc.reply}})
			defer srv.Close()
			dir := t.TempDir()
			if tc.config != "" {
				dir = writeConfig(t, tc.config)
			}
			r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": srv.URL, "LODE_MODEL": "m"}, "", tc.args...)
			want := "lode: the model endpoint " + srv.URL + " sent nothing for " + tc.limit + " (--idle-timeout, or model.idle_timeout in lode.yaml) and the run was stopped\n"
			if r.code != 1 || !strings.HasSuffix(r.stderr, want) || strings.Count(r.stderr, "lode:") != 1 {
				t.Fatalf("exit %d, stderr %q; want 1, %q", r.code, r.stderr, want)
			}
		})
	}
}

func TestIdleTimeoutDefault(t *testing.T) {
	cfg, err := (&options{}).load(env{getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(cfg.Model.IdleTimeout) != openai.DefaultIdleTimeout || cfg.Model.Timeout != 0 {
		t.Fatalf("idle %v, run %v", time.Duration(cfg.Model.IdleTimeout), time.Duration(cfg.Model.Timeout))
	}
}

func TestHardenedBadInputs(t *testing.T) {
	cases := []struct {
		name   string
		config string
		args   []string
		code   int
		want   string
	}{
		{"mcp timeout not a duration", "mcp:\n  - name: x\n    command: [x]\n    timeout: soon\n", []string{"tools"}, 1,
			`lode: lode.yaml:4: mcp[0].timeout: "soon" is not a duration (write e.g. 90s, 5m or 1h30m)`},
		{"mcp timeout without a unit", "mcp:\n  - name: x\n    command: [x]\n  - name: y\n    command: [y]\n    timeout: 30\n", []string{"tools"}, 1,
			`lode: lode.yaml:6: mcp[1].timeout: "30" is not a duration (write e.g. 90s, 5m or 1h30m)`},
		{"mcp timeout zero", "mcp:\n  - name: x\n    command: [x]\n    timeout: 0s\n", []string{"tools"}, 1,
			`lode: lode.yaml:4: mcp server "x": timeout must be more than 0 (leave it out for the client's default)`},
		{"mcp timeout negative", "mcp:\n  - name: x\n    command: [x]\n    timeout: -5s\n", []string{"tools"}, 1,
			`lode: lode.yaml:4: mcp server "x": timeout must be more than 0 (leave it out for the client's default)`},
		{"mcp timeout a list", "mcp:\n  - name: x\n    command: [x]\n    timeout: [1s]\n", []string{"tools"}, 1,
			"lode: lode.yaml:4: mcp[0].timeout must be a duration (write e.g. 90s, 5m or 1h30m)"},
		{"model timeout not a duration", "model:\n  name: m\n  timeout: forever\n", []string{"tools"}, 1,
			`lode: lode.yaml:3: model.timeout: "forever" is not a duration (write e.g. 90s, 5m or 1h30m)`},
		{"model timeout negative", "model:\n  timeout: -1m\n", []string{"tools"}, 1,
			"lode: lode.yaml:2: model.timeout must not be negative (0 means no limit)"},
		{"model idle_timeout negative", "model:\n  idle_timeout: -1s\n", []string{"tools"}, 1,
			"lode: lode.yaml:2: model.idle_timeout must not be negative (0 means the default, 2m0s)"},
		{"model not a mapping", "model: gpt\n", []string{"tools"}, 1, "lode: lode.yaml:1: model must be a mapping of keys"},
		{"mcp not a list", "mcp:\n  name: x\n", []string{"tools"}, 1, "lode: lode.yaml:2: mcp must be a list"},
		{"unknown key in the second mcp server", "mcp:\n  - name: x\n    command: [x]\n  - name: y\n    comand: [y]\n", []string{"tools"}, 1,
			`lode: lode.yaml:5: unknown key "comand" in an mcp: server`},
		{"unknown key after an alias", "base: &b {name: m}\n", []string{"tools"}, 1, `lode: lode.yaml:1: unknown key "base" at the top level`},
		{"mcp server without a name", "tools:\n  calculator: {}\nmcp:\n  - command: [x]\n", []string{"tools"}, 1, "lode: lode.yaml:4: mcp[0] has no name"},
		{"unknown pack after others", "tools:\n  calculator: {}\n\n  calculater: {}\n", []string{"tools"}, 1,
			`lode: lode.yaml:4: unknown pack "calculater" in tools:; the packs are bash, calculator, filesystem, local, skills`},
		{"skills without directories", "tools:\n  skills: {}\n", []string{"tools"}, 1,
			"lode: lode.yaml:2: tools.skills names no skill directories: give dir: PATH or dirs: [PATH, ...]"},
		{"skills with an empty list", "tools:\n  calculator:\n  skills:\n    dirs: []\n", []string{"tools"}, 1,
			"lode: lode.yaml:3: tools.skills names no skill directories: give dir: PATH or dirs: [PATH, ...]"},
		{"skills with no value", "tools:\n  skills:\n", []string{"tools"}, 1,
			"lode: lode.yaml:2: tools.skills names no skill directories: give dir: PATH or dirs: [PATH, ...]"},
		{"negative --max-turns", "", []string{"run", "--max-turns", "-1", "hi"}, 2,
			"lode: --max-turns -1: must not be negative (0 means max_turns in lode.yaml, or 20)"},
		{"negative --timeout", "", []string{"run", "--timeout", "-1s", "hi"}, 2,
			"lode: --timeout -1s: must not be negative (0 means model.timeout in lode.yaml, or no limit)"},
		{"negative --idle-timeout", "", []string{"chat", "--idle-timeout", "-1s"}, 2,
			"lode: --idle-timeout -1s: must not be negative (0 means model.idle_timeout in lode.yaml, or 2m0s)"},
		{"--timeout without a unit", "", []string{"run", "--timeout", "30", "hi"}, 2,
			`lode: invalid value "30" for flag -timeout: parse error`},
		{"an unknown flag after the prompt", "", []string{"run", "hi", "--modle", "m"}, 2, "lode: flag provided but not defined: -modle (did you mean --model?)\n"},
		{"a prompt's word taken for a flag", "", []string{"run", "hi", "-x", "m"}, 2,
			`lode: flag provided but not defined: -x (flags may come before or after the other arguments; put -- before an argument that starts with "-")`},
		{"an unknown flag before the prompt", "", []string{"run", "--modle", "m", "hi"}, 2, "lode: flag provided but not defined: -modle (did you mean --model?)\n"},
		{"a flag nothing is close to", "", []string{"run", "--zzz", "hi"}, 2, "lode: flag provided but not defined: -zzz\n"},
		{"only -- and no prompt", "", []string{"run", "--"}, 2, `lode: lode run needs a prompt: lode run "what is 2^64?" (or lode run - to read it from standard input)`},
		{"chat with a prompt", "", []string{"chat", "hello"}, 2, `lode: lode chat takes no arguments; got "hello"`},
		{"tools with an argument", "", []string{"tools", "--json", "calculator"}, 2, `lode: lode tools takes no arguments; got "calculator"`},
		{"serve with an argument", "", []string{"serve", "stdio"}, 2, `lode: lode serve takes no arguments; got "stdio"`},
		{"demo with an argument", "", []string{"demo", "now"}, 2, `lode: lode demo takes no arguments; got "now"`},
		{"version with an argument", "", []string{"version", "--short"}, 2, `lode: lode version takes no arguments; got "--short"`},
		{"run - with nothing on standard input", "", []string{"run", "-"}, 2, "lode: lode run -: standard input held no prompt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.config != "" {
				dir = writeConfig(t, c.config)
			}
			r := lode(t, dir, nil, "", c.args...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, c.code, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if last := lines[len(lines)-1] + "\n"; !strings.HasPrefix(last, c.want) {
				t.Fatalf("stderr %q, want a last line starting %q", r.stderr, c.want)
			}
			if len(lines) != 1 {
				t.Fatalf("more than one line on stderr: %q", r.stderr)
			}
		})
	}
}

func TestMCPTimeoutFromConfig(t *testing.T) {
	cfg, err := parseConfig("lode.yaml", []byte("mcp:\n  - name: slow\n    command: [x]\n    timeout: 45s\n  - name: plain\n    url: http://127.0.0.1:1/mcp\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Duration(cfg.MCP[0].Timeout); got != 45*time.Second {
		t.Errorf("slow: timeout %v", got)
	}
	if got := cfg.MCP[1].Timeout; got != 0 {
		t.Errorf("plain: timeout %v, want 0 (the client's default)", time.Duration(got))
	}
}

// userPrompt is the last user message of a recorded request.
func userPrompt(t *testing.T, f *fakeOpenAI, i int) string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) <= i {
		t.Fatalf("%d requests", len(f.requests))
	}
	msgs := f.requests[i]["messages"].([]any)
	return msgs[len(msgs)-1].(map[string]any)["content"].(string)
}

func TestFlagsAfterThePrompt(t *testing.T) {
	cases := []struct {
		name   string
		args   []string
		prompt string
		model  string
	}{
		{"after", []string{"run", "what is 2+2?", "--model", "late"}, "what is 2+2?", "late"},
		{"between words", []string{"run", "what", "--model", "mid", "is", "it"}, "what is it", "mid"},
		{"= form after", []string{"run", "hi", "--model=eq"}, "hi", "eq"},
		{"-- keeps the rest as the prompt", []string{"run", "--model", "m", "--", "--model", "x"}, "--model x", "m"},
		{"-- after a word", []string{"run", "--model", "m", "explain", "--", "-v"}, "explain -v", "m"},
		{"-- after a bool flag", []string{"run", "--model", "m", "--trace", "--", "--model", "x"}, "--model x", "m"},
		{"-- after a flag=value", []string{"run", "--model=m", "--", "--model", "x"}, "--model x", "m"},
		{"-- as a flag's value", []string{"run", "--system", "--", "hi", "--model", "late"}, "hi", "late"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("ok")}}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			r := lode(t, t.TempDir(), map[string]string{"OPENAI_BASE_URL": srv.URL}, "", tc.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if got := userPrompt(t, fake, 0); got != tc.prompt {
				t.Errorf("prompt %q, want %q", got, tc.prompt)
			}
			fake.mu.Lock()
			defer fake.mu.Unlock()
			if got := fake.requests[0]["model"]; got != tc.model {
				t.Errorf("model %v, want %q", got, tc.model)
			}
		})
	}
}

func TestRunReadsThePromptFromStandardInput(t *testing.T) {
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("ok")}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	stdin := "Summarise this:\n  line one\n  line two\n"
	r := lode(t, t.TempDir(), map[string]string{"OPENAI_BASE_URL": srv.URL}, stdin, "run", "-", "--model", "m")
	if r.code != 0 || r.stdout != "ok\n" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if got := userPrompt(t, fake, 0); got != strings.TrimSpace(stdin) {
		t.Errorf("prompt %q", got)
	}
}

func TestRunRefusesAnOversizedOrBinaryPrompt(t *testing.T) {
	cases := []struct {
		name, stdin, want string
	}{
		{"too long", strings.Repeat("a", maxPrompt+1), "lode: the prompt on standard input is longer than 1048576 bytes\n"},
		{"not UTF-8", "caf\xe9\n", "lode: the prompt on standard input is not UTF-8 text\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := lode(t, t.TempDir(), nil, tc.stdin, "run", "-")
			if r.code != 1 || r.stderr != tc.want {
				t.Fatalf("exit %d stderr %q, want 1 %q", r.code, r.stderr, tc.want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	cases := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"a clone", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/lodeworks/lode", Version: "(devel)"}},
			true, "lode (devel)\nmodule github.com/lodeworks/lode\ncommit unknown (built without VCS stamps)\ngo1.26.8\n"},
		{"no version recorded", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/lodeworks/lode"}},
			true, "lode (devel)\nmodule github.com/lodeworks/lode\ncommit unknown (built without VCS stamps)\ngo1.26.8\n"},
		{"a module release, no VCS stamps", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/lodeworks/lode", Version: "v0.3.1"}},
			true, "lode v0.3.1\nmodule github.com/lodeworks/lode\ncommit unknown (built without VCS stamps)\ngo1.26.8\n"},
		{"a release with its commit", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/lodeworks/lode", Version: "v0.3.1"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-11-30T14:00:00Z"}, {Key: "vcs.modified", Value: "false"}}},
			true, "lode v0.3.1\nmodule github.com/lodeworks/lode\ncommit 0123abcd (2026-11-30T14:00:00Z)\ngo1.26.8\n"},
		{"a build with local changes", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/lodeworks/lode", Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"}}},
			true, "lode (devel)\nmodule github.com/lodeworks/lode\ncommit 0123abcd with uncommitted changes\ngo1.26.8\n"},
		{"no build information", nil, false, "lode (unknown version: built without module information)\n" + runtime.Version() + "\n"},
	}
	for _, tc := range cases {
		if got := versionText(tc.bi, tc.ok); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	for _, arg := range []string{"--version", "version"} {
		r := lode(t, "", nil, "", arg)
		if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.stdout, "lode ") || !strings.HasSuffix(r.stdout, "\n"+runtime.Version()+"\n") {
			t.Errorf("%s: exit %d stdout %q stderr %q", arg, r.code, r.stdout, r.stderr)
		}
	}
}

func TestToolsExplainsTheNames(t *testing.T) {
	board := t.TempDir()
	r := lode(t, writeConfig(t, fmt.Sprintf("tools:\n  calculator: {}\n  local: {path: %q}\n", board)), nil, "", "tools")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"calculator__eval", "local_query", naming + "\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	r = lode(t, "", nil, "", "tools", "-h")
	if r.code != 0 || !strings.Contains(r.stderr, naming) {
		t.Errorf("tools -h: exit %d stderr %q", r.code, r.stderr)
	}
}

// readmeBlock returns the body of the first fenced block of the docs
// (README.md, then the guides, docs/config.md last) that opens with fence
// and, when has is not empty, contains has.
func readmeBlock(t *testing.T, fence, has string) string {
	t.Helper()
	lang := strings.TrimPrefix(fence, "```")
	for _, b := range docBlocks(t) {
		if b.lang == lang && strings.Contains(b.text, has) {
			return b.text
		}
	}
	t.Fatalf("the docs have no %s block containing %q", fence, has)
	return ""
}

// TestREADMEConfigWorksAsWritten copies the README's lode.yaml, as it is,
// into an empty folder, makes the directories the README says to make, and
// lists its tools. npx is played by lode's own MCP server, so the test needs
// neither Node.js nor the network.
func TestREADMEConfigWorksAsWritten(t *testing.T) {
	yamlText := readmeBlock(t, "```yaml", "mcp:")
	setup := readmeBlock(t, "```sh", "mkdir ")
	dir := writeConfig(t, yamlText)
	for _, line := range strings.Split(strings.TrimSpace(setup), "\n") {
		words := strings.Fields(line)
		if len(words) < 2 || words[0] != "mkdir" {
			t.Fatalf("the README's set-up block has %q; this test knows only mkdir", line)
		}
		for _, d := range words[1:] {
			if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	inner := writeConfig(t, "tools:\n  calculator: {}\n")
	bin := t.TempDir()
	npx := fmt.Sprintf("#!/bin/sh\nexec %q serve --config %q\n", lodeBin, filepath.Join(inner, "lode.yaml"))
	if err := os.WriteFile(filepath.Join(bin, "npx"), []byte(npx), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	r := lode(t, dir, nil, "", "tools")
	if r.code != 0 {
		t.Fatalf("lode tools on the README's lode.yaml: exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"calculator__eval", "filesystem__read", "local_query", "everything__calculator__eval"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("lode tools lacks %s:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "filesystem__write") {
		t.Error("read_only: true, yet filesystem__write is offered")
	}
	cfg, err := parseConfig("README", []byte(yamlText))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model.Timeout == 0 || cfg.Model.IdleTimeout == 0 || cfg.MCP[0].Timeout == 0 {
		t.Errorf("the README's example should show every timeout: %+v %+v", cfg.Model, cfg.MCP[0])
	}

	// Without the directories, the error says which one is missing.
	missing := writeConfig(t, yamlText)
	r = lode(t, missing, nil, "", "tools")
	line := 1 + strings.Count(yamlText[:strings.Index(yamlText, "  filesystem:")], "\n")
	want := fmt.Sprintf("lode: lode.yaml:%d: tools.filesystem: open root: open ./workspace: no such file or directory (lode creates no directories: make it first)\n", line)
	if r.code != 1 || r.stderr != want {
		t.Errorf("without the directories: exit %d stderr %q, want %q", r.code, r.stderr, want)
	}
}
