package cli

// TestREADMEAsWritten runs the examples of README.md and of every guide in
// docs/ as written. The rule, for whoever adds a section to them:
//
//   - Every ```go block parses as Go (statements, or declarations).
//   - A ```sh block whose first line is "# external: why" runs things
//     outside lode (a third-party server, an account) and is skipped.
//   - Every ```yaml block is a whole lode.yaml: parseConfig must accept it
//     as it stands. Write a fragment only in a block of another language.
//   - Every line of a ```sh block, or of a bare ``` block, that is not
//     blank and not a comment is a command. The part from " #" on is a
//     comment. Each command must have an entry in readmeCommands, keyed by
//     the command exactly as written (without its comment); a command with
//     none fails the test, naming its line.
//   - An entry either runs the command or says why it cannot run here.
//     Commands run in-process (run(ctx, env, args)), in an empty temporary
//     folder, offline: a command that needs a model talks to the scripted
//     OpenAI-wire fake (fakeOpenAI, answering "Hello from the fake.")
//     through OPENAI_BASE_URL, with LODE_MODEL=m, and no key. Placeholders
//     are filled in the entry's args: URL the fake's URL, M the model m,
//     DIR a store folder, ID a thread created there first (thread: true),
//     FILE a file in the folder, "..." a prompt. config says which
//     lode.yaml the folder holds. The entry checks the exit code and a
//     piece of stdout and stderr.
//   - An entry that cannot run (it serves until stopped, needs a browser
//     or a person, installs software, runs the whole suite) says why in
//     skip, and names the test that covers it, if any.

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go/parser"
	"go/token"
)

// readmeCommand is how TestREADMEAsWritten runs one command of the README.
type readmeCommand struct {
	// runs are the commands' arguments after "lode", placeholders filled.
	runs  [][]string
	stdin string
	// config is the folder's lode.yaml: "" none, "main" the README's first
	// lode.yaml (its folders made, npx played by lode serve), "policy" the
	// roles example of docs/policy.md added to that lode.yaml.
	config string
	// thread: make a stored thread first (run --store DIR), for ID.
	thread bool
	code   int
	// has is a piece of the output (stdout, then stderr) of the last run.
	has  string
	skip string
}

var readmeCommands = map[string]readmeCommand{
	// Set-up
	"go run ./cmd/lode demo": {runs: [][]string{{"demo"}}, has: "notes/answer.txt on disk"},
	"go install ./cmd/lode":  {skip: "installs into GOPATH/bin; TestMain builds the same binary"},
	"scripts/test":           {skip: "the whole test suite"},
	// The lode command
	"lode demo": {runs: [][]string{{"demo"}}, has: "notes/answer.txt on disk"},
	`lode run --base-url URL --model M "..."`:                     {runs: [][]string{{"run", "--base-url", "URL", "--model", "m", "what is 2+2?"}}, has: "Hello from the fake."},
	"lode run --model M - < prompt.txt":                           {runs: [][]string{{"run", "--model", "m", "-"}}, stdin: "what is 2+2?\n", has: "Hello from the fake."},
	"lode chat":                                                   {runs: [][]string{{"chat"}}, stdin: "hi\n", has: "Hello from the fake."},
	`lode run --store DIR --thread ID "..."`:                      {runs: [][]string{{"run", "--store", "DIR", "--thread", "ID", "and then?"}}, thread: true, has: "Hello from the fake."},
	"lode run --store DIR --thread ID":                            {runs: [][]string{{"run", "--store", "DIR", "--thread", "ID"}}, thread: true, code: exitUsage, has: "ends with the model's answer, so there is nothing to go on with"},
	`lode run --store DIR --tenant T "..."`:                       {runs: [][]string{{"run", "--store", "DIR", "--tenant", "acme", "hi"}}, has: "Hello from the fake."},
	"lode fork --store DIR ID --at N":                             {runs: [][]string{{"fork", "--store", "DIR", "ID", "--at", "2"}}, thread: true, has: "goes on with it"},
	"lode threads --store DIR":                                    {runs: [][]string{{"threads", "--store", "DIR"}}, thread: true, has: "the first question"},
	"lode tools":                                                  {runs: [][]string{{"tools"}}, config: "main", has: "everything__calculator__eval"},
	"lode serve [--http 127.0.0.1:8080]":                          {runs: [][]string{{"serve"}}}, // stdio; standard input at its end stops it
	"lode web":                                                    {skip: "serves until stopped; TestWebServesThePage starts it on a free port"},
	"lode web --addr 0.0.0.0:7480 --allow-host chat.example.com":  {skip: "serves until stopped, on every address; TestWebReplicasOverPostgres runs two replicas over one store, TestWebLogins* their logins"},
	"lode serve --http 0.0.0.0:8080 --allow-host mcp.example.com": {skip: "serves until stopped, on every address; TestServeLoginsFailClosed checks its logins"},
	"lode worker --every 10s":                                     {skip: "recovers until stopped; TestWorkerRecoversUntilInterrupted runs it"},
	"lode web --store postgres://lode@db.internal/lode":           {skip: "serves until stopped, on a database server; TestWebReplicasOverPostgres runs two on the test's PostgreSQL"},
	"lode threads --store sqlite:.lode/threads.db":                {runs: [][]string{{"threads", "--store", "sqlite:.lode/threads.db"}}, has: "no threads in sqlite:.lode/threads.db (the file does not exist)"},
	"lode policy check | explain --role R [TOOL]": {runs: [][]string{{"policy", "check"}, {"policy", "explain", "--role", "viewer", "filesystem__read"}},
		config: "policy", has: "filesystem__read"},
	"lode policy schema > policy.schema.json":   {runs: [][]string{{"policy", "schema"}}, has: "calls_per_turn"},
	"lode mcp login NAME":                       {skip: "needs a browser and an OAuth server; TestMCPLogin* drive it against a fake one"},
	"lode resume --store DIR THREAD approve:ID": {skip: "needs a run paused for approval; TestRunPausesAndResumeFinishes runs this command on one"},
	`lode run --record FILE "..."`:              {runs: [][]string{{"run", "--record", "FILE", "hi"}}, has: "Hello from the fake."},
	"lode eval suite.yaml | diff a.json b.json": {skip: "needs a suite and two reports; TestEval runs both forms on examples/evals' suite"},
	"lode --version":                            {runs: [][]string{{"--version"}}, has: "module github.com/lodeworks/lode"},
	// Durable runs
	"lode recover --store .lode/threads":             {runs: [][]string{{"recover", "--store", ".lode/threads"}}, has: "no stopped runs to recover"},
	"lode worker  --store .lode/threads --every 10s": {skip: "runs until Ctrl-C or SIGTERM; TestWorker* stop it by its context"},
	// Durable runs on Temporal
	"lode worker --temporal 127.0.0.1:7233 --store /shared/threads":                   {skip: "needs x/temporal's build and a Temporal server; scripts/temporal-dev.sh test runs it (TestRealServerWorkers)"},
	`lode run    --temporal 127.0.0.1:7233 --store /shared/threads "…"`:               {skip: "needs x/temporal's build and a Temporal server; TestTemporalRunPausesAndResumes runs it on a fake engine"},
	"lode resume --temporal 127.0.0.1:7233 --store /shared/threads THREAD approve:ID": {skip: "needs x/temporal's build and a Temporal server; TestTemporalRunPausesAndResumes runs it on a fake engine"},
	// Serving at scale (docs/serving-at-scale.md)
	"scripts/setup-load.sh":                                                                 {skip: "installs Node.js and the AI SDK from npm; scripts/test runs it before bench/load's TestSmoke"},
	"go run ./bench/load -n 10,100,1000":                                                    {skip: "minutes of load on the whole machine; bench/load's TestSmoke runs the same harness at N=2"},
	"go run ./bench/load -n 100 -servers postgres,aisdk -rounds 5 -v":                       {skip: "minutes of load; bench/load's TestSmoke runs the harness at N=2 on every server"},
	"go run ./bench/load -n 1000 -servers file -rounds 1 -turns 12 -pprof 127.0.0.1:6061 &": {skip: "minutes of load; bench/load's TestSmoke runs the harness, and go vet -tags lodeprofile builds the profiled lode"},
	"go tool pprof -top http://127.0.0.1:6061/debug/pprof/profile?seconds=10":               {skip: "reads the profile of a lode web under load, started by the line before"},
	"curl -s 'http://127.0.0.1:6061/debug/pprof/goroutine?debug=2' > goroutines.txt":        {skip: "reads the goroutines of a lode web under load, started two lines before"},
	// A2A (docs/a2a.md)
	"go install github.com/lodeworks/lode/x/a2a/cmd/lode@latest": {skip: "installs the lode that has A2A; x/a2a/cmd/lode's TestServeA2A builds and runs it"},
	"lode serve --a2a 127.0.0.1:7490":                            {skip: "serves until stopped, in x/a2a's lode; TestServeA2A (x/a2a/cmd/lode) runs it end to end"},
	// Set-up of the README's lode.yaml (done for config: "main")
	"mkdir workspace board": {skip: "made by readmeMainConfig"},
}

// readmeLine is one command or yaml block of the docs, where it is written.
type readmeLine struct {
	at  string // file:line
	cmd string
}

// docBlock is one fenced block of README.md or a guide in docs/.
type docBlock struct {
	file string
	line int // of the opening fence
	lang string
	text string
}

// docFiles are README.md and the guides, README first and the lode.yaml
// reference last, so that a search for an example finds the guide's.
func docFiles(t *testing.T) []string {
	t.Helper()
	guides, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(guides) == 0 {
		t.Fatalf("no guides in docs/: %v", err)
	}
	slices.SortStableFunc(guides, func(a, b string) int {
		return cmpBool(filepath.Base(a) == "config.md", filepath.Base(b) == "config.md")
	})
	return append([]string{filepath.Join("..", "..", "README.md")}, guides...)
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// docBlocks returns every fenced block of README.md and docs/*.md.
func docBlocks(t *testing.T) []docBlock {
	t.Helper()
	var out []docBlock
	for _, path := range docFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(filepath.ToSlash(path), "../../")
		var cur *docBlock
		var body []string
		for i, l := range strings.Split(string(data), "\n") {
			trimmed := strings.TrimSpace(l)
			if !strings.HasPrefix(trimmed, "```") {
				if cur != nil {
					body = append(body, l)
				}
				continue
			}
			if cur == nil {
				cur, body = &docBlock{file: name, line: i + 1, lang: strings.TrimPrefix(trimmed, "```")}, nil
				continue
			}
			cur.text = strings.Join(body, "\n") + "\n"
			out = append(out, *cur)
			cur = nil
		}
		if cur != nil {
			t.Fatalf("%s:%d: a block is not closed", name, cur.line)
		}
	}
	return out
}

// external says a shell block runs things outside lode (a third-party
// server, an account): its first line is a comment "# external: why".
func (b docBlock) external() bool {
	first, _, _ := strings.Cut(strings.TrimSpace(b.text), "\n")
	return strings.HasPrefix(first, "# external:")
}

// readmeFile returns the docs' yaml blocks and the commands of their sh and
// bare blocks, each with where it is written.
func readmeFile(t *testing.T) (yamls []readmeLine, cmds []readmeLine) {
	t.Helper()
	for _, b := range docBlocks(t) {
		switch {
		case b.lang == "yaml":
			yamls = append(yamls, readmeLine{fmt.Sprintf("%s:%d", b.file, b.line), b.text})
		case (b.lang == "sh" || b.lang == "") && !b.external():
			for i, l := range strings.Split(b.text, "\n") {
				cmd := strings.TrimSpace(l)
				if c, _, ok := strings.Cut(cmd, " #"); ok {
					cmd = strings.TrimSpace(c)
				}
				if cmd != "" && !strings.HasPrefix(cmd, "#") {
					cmds = append(cmds, readmeLine{fmt.Sprintf("%s:%d", b.file, b.line+1+i), cmd})
				}
			}
		}
	}
	return yamls, cmds
}

// TestREADMEAsWritten runs the examples of README.md and of every guide in
// docs/, by the rule at the top of this file.
func TestREADMEAsWritten(t *testing.T) {
	yamls, cmds := readmeFile(t)
	if len(yamls) == 0 || len(cmds) == 0 {
		t.Fatalf("the docs: %d yaml blocks, %d commands", len(yamls), len(cmds))
	}
	for _, y := range yamls {
		if _, err := parseConfig("lode.yaml", []byte(y.cmd)); err != nil {
			t.Errorf("%s: the lode.yaml block does not parse: %v", y.at, err)
		}
	}
	for _, b := range docBlocks(t) {
		if b.lang == "go" {
			if err := parseGoBlock(b.text); err != nil {
				t.Errorf("%s:%d: the go block does not parse: %v", b.file, b.line, err)
			}
		}
	}
	seen := map[string]bool{}
	for _, c := range cmds {
		entry, ok := readmeCommands[c.cmd]
		if !ok {
			t.Errorf("%s: %q has no entry in readmeCommands (readme_test.go): add one that runs it offline, or says why it cannot", c.at, c.cmd)
			continue
		}
		if seen[c.cmd] {
			continue
		}
		seen[c.cmd] = true
		t.Run(fmt.Sprintf("%s %s", c.at, c.cmd), func(t *testing.T) {
			if entry.skip != "" {
				t.Skip(entry.skip)
			}
			runReadmeCommand(t, yamls, entry)
		})
	}
	for k := range readmeCommands {
		if !seen[k] {
			t.Errorf("readmeCommands has %q, which the docs no longer have: remove it", k)
		}
	}
	// Every command lode's help lists is in some block, so it has an entry
	// that runs it or names the test that does.
	for _, sub := range regexp.MustCompile(`(?m)^  lode ([a-z-]+)`).FindAllStringSubmatch(usage, -1) {
		if !slices.ContainsFunc(cmds, func(c readmeLine) bool { return strings.HasPrefix(c.cmd, "lode "+sub[1]) }) {
			t.Errorf("lode %s is in lode's help but in no command block of README.md or docs/", sub[1])
		}
	}
}

// parseGoBlock parses a go block as the statements of a function body or,
// failing that, as declarations: the docs' snippets leave out the package,
// the imports and the variables around them, so they are parsed, not built.
// An ellipsis (…) stands for code left out.
func parseGoBlock(text string) error {
	text = strings.ReplaceAll(text, "…", "/* … */")
	fset := token.NewFileSet()
	if _, err := parser.ParseFile(fset, "", "package p\nfunc _() {\n"+text+"\n}\n", 0); err == nil {
		return nil
	}
	_, err := parser.ParseFile(fset, "", "package p\n"+text, 0)
	return err
}

// runReadmeCommand runs one entry's commands in a folder of their own.
func runReadmeCommand(t *testing.T, yamls []readmeLine, entry readmeCommand) {
	var dir string
	switch entry.config {
	case "":
		dir = t.TempDir()
	case "main":
		dir = readmeMainConfig(t, yamls[0].cmd)
	case "policy":
		// docs/policy.md's roles over the README's own lode.yaml: a guide's
		// example must fit the first lode.yaml a reader wrote.
		dir = readmeMainConfig(t, yamls[0].cmd+readmeYAML(t, yamls, "user: erin"))
	default:
		t.Fatalf("config %q is not one the test knows", entry.config)
	}
	var replies []func(http.ResponseWriter, *http.Request)
	for range 4 {
		replies = append(replies, textReply("Hello from the fake."))
	}
	fake := &fakeOpenAI{replies: replies}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "LODE_MODEL": "m"}
	store := filepath.Join(dir, "store")
	id := ""
	if entry.thread {
		r := lode(t, dir, vars, "", "run", "--store", store, "the first question")
		m := threadLine.FindStringSubmatch(r.stderr)
		if r.code != 0 || m == nil {
			t.Fatalf("making a thread: exit %d, stderr:\n%s", r.code, r.stderr)
		}
		id = m[1]
	}
	fill := strings.NewReplacer("URL", srv.URL+"/v1", "DIR", store, "ID", id, "FILE", filepath.Join(dir, "session.yaml"))
	var r result
	for _, args := range entry.runs {
		filled := make([]string, len(args))
		for i, a := range args {
			filled[i] = fill.Replace(a)
		}
		r = lode(t, dir, vars, entry.stdin, filled...)
		if r.code != entry.code {
			t.Fatalf("lode %s: exit %d, want %d; stdout:\n%s\nstderr:\n%s", strings.Join(filled, " "), r.code, entry.code, r.stdout, r.stderr)
		}
	}
	if !strings.Contains(r.stdout+r.stderr, entry.has) {
		t.Fatalf("the output lacks %q; stdout:\n%s\nstderr:\n%s", entry.has, r.stdout, r.stderr)
	}
}

// readmeYAML is the README's yaml block that contains has.
func readmeYAML(t *testing.T, yamls []readmeLine, has string) string {
	t.Helper()
	for _, y := range yamls {
		if strings.Contains(y.cmd, has) {
			return y.cmd
		}
	}
	t.Fatalf("the docs have no yaml block with %q", has)
	return ""
}

// readmeMainConfig is a folder holding the README's first lode.yaml, the
// folders its set-up block makes, and an npx that starts lode's own MCP
// server in place of the npm package, so that no network is needed.
func readmeMainConfig(t *testing.T, body string) string {
	t.Helper()
	dir := writeConfig(t, body)
	setup := readmeBlock(t, "```sh", "mkdir ")
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
	return dir
}

// The README's MCP example gives connecting its own timeout, long enough
// for npx on a cold cache, apart from the per-call one.
func TestREADMEMCPTimeouts(t *testing.T) {
	yamls, _ := readmeFile(t)
	cfg, err := parseConfig("lode.yaml", []byte(yamls[0].cmd))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.MCP) == 0 || cfg.MCP[0].ConnectTimeout < Duration(60e9) || cfg.MCP[0].Timeout == 0 {
		t.Fatalf("the README's mcp: example: %+v; want connect_timeout: of at least 60s and a timeout:", cfg.MCP)
	}
	if !regexp.MustCompile(`loop\.WithInvokeOptions\(xtool\.WithFilteredTools\(reg, `).MatchString(readmeBlock(t, "```go", "web.New(")) {
		t.Error("the README's web snippet offers the model no tools: it needs loop.WithInvokeOptions(xtool.WithFilteredTools(reg, ...))")
	}
}
