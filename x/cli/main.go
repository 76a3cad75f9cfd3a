package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/cassette"
	"github.com/lodeworks/lode/x/tool/mcp"
)

const usage = `lode — an LLM agent loop with tools, packs and MCP

usage:
  lode demo                      a complete multi-turn run with a scripted model, offline
  lode run [flags] "prompt"      run an agent once on an OpenAI-compatible endpoint
  lode run [flags] -             the same, the prompt read from standard input
  lode run --record FILE "..."   record the run's traffic with the model and MCP servers
  lode run --replay FILE "..."   replay a recorded run, with no network
  lode chat [flags]              talk to the agent; Ctrl-C stops a turn, Ctrl-D quits
  lode run|chat --thread ID ...  go on with a stored thread (--store, or store: in lode.yaml);
                                 it keeps its model and tenant, and lode run --thread ID
                                 without a prompt goes on with a run the model never answered
  lode run|chat --tenant T ...   a new thread of tenant T: the policy's tenants: limits bind it
  lode threads [flags] [THREAD]  list the stored threads: ID, title, turns, updated, paused,
                                 and what a fork was made from; THREAD: it and its forks
  lode fork [flags] THREAD --at N
                                 a new thread of THREAD's first N turns (--store); prints its ID
  lode resume [flags] THREAD [approve:ID | deny:ID=REASON | edit:ID=JSON ...]
                                 decide on calls waiting for approval (--store), then go on
  lode recover [flags] --store DIR
                                 finish the runs whose process died (kill -9, a crash)
  lode worker [flags] --store DIR [--every 10s]
                                 recover stopped runs until Ctrl-C or SIGTERM
  lode worker [flags] --temporal HOST:PORT
                                 run the agent for Temporal (lode run and resume --temporal)
  lode tools [flags]             list the tools the configuration mounts
  lode serve [flags]             serve the configured packs over MCP (stdio, or --http ADDR)
  lode serve [flags] --a2a ADDR  serve the configured agent over A2A (x/a2a/cmd/lode's build)
  lode web [flags]               a chat page for the configured agent (--addr, loopback only)
  lode policy check|explain|schema
                                 the role policy: check it against the mounted tools,
                                 explain --role R [TOOL], print its JSON Schema
  lode mcp login NAME            log in to the url: MCP server NAME (OAuth, a browser link)
  lode eval SUITE.yaml|diff A B  run eval cases offline; diff compares two reports
  lode --version                 the version, commit and Go release of this build

Flags go before or after the prompt; -- ends them. Configuration comes from
./lode.yaml (or --config), then the environment (OPENAI_BASE_URL, LODE_MODEL;
the key from OPENAI_API_KEY, or the variable model.api_key_env names), then
flags. --timeout (model.timeout) bounds a whole run; --idle-timeout
(model.idle_timeout) bounds the model server's silence. --trace prints spans
to stderr; OTEL_EXPORTER_OTLP_ENDPOINT sends them, and the metrics (tokens,
dollars, tool durations), to an OTLP/HTTP collector.

lode serve --http takes a loopback address (127.0.0.1:8080, localhost:8080,
[::1]:8080) and answers only requests that name a loopback host. The tools run
for anyone who can reach the server, unauthenticated, so another address is
refused unless --allow-host NAME says which Host the clients use ("*": any).

` + doorsHelp + `

` + temporalNotes + `
` + exitCodes + `

Run "lode <command> -h" for a command's flags.
`

// doorsHelp says what each command does with a call that needs approval.
const doorsHelp = `Approvals: calls to destructive tools, to what approve: in lode.yaml names, and
to what the policy's approve: rules name for the caller's roles wait for a
person at every door. chat asks in the terminal; run stops (exit 3) and prints
the lode resume commands that decide; web shows an approval card; serve asks
the MCP client through elicitation, and refuses the call when it cannot ask.
A mounted MCP server's tool without annotations counts as destructive (MCP's
defaults); under the server's entry in lode.yaml, read_only: true takes all its
tools as read-only, and trust: [TOOL, ...] the tools named as not destructive.`

// temporalNotes is the part of the help that says what --temporal does.
const temporalNotes = `Temporal: lode worker --temporal HOST:PORT serves lode.yaml's agent to a Temporal
cluster; lode run --temporal HOST:PORT "prompt" starts the run there, on a
thread of the store every worker shares (--store, or store: in lode.yaml), and
prints its turns as they land; lode resume --temporal sends the decisions on a
paused run. temporal.namespace and temporal.task_queue in lode.yaml (or
--temporal-namespace, --temporal-task-queue) say where; default and lode by
default. The lode of the root module has no Temporal: it comes with
go install github.com/lodeworks/lode/x/temporal/cmd/lode@latest
`

// exitCodes is the part of the help that says how lode ends.
const exitCodes = `Exit codes: 0 success (lode serve also when Ctrl-C or SIGTERM stops it; lode
resume also when nothing waits); 1 an error, reported on one line of stderr;
2 a mistake in the command line; 3 lode run or resume paused: tool calls wait
for approval (the lode resume commands that decide are printed); 4 a guard
stopped the turn (guards: in lode.yaml; the thread keeps the tripwire);
130 lode run stopped by Ctrl-C; 143 lode run or chat stopped by SIGTERM.`

// env is what a command reads and writes, so tests can run it in-process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// interrupts delivers Ctrl-C; nil means the process's own signals.
	interrupts <-chan os.Signal
	// flushWait bounds the wait for spans to reach a collector at exit;
	// zero means defaultFlushWait.
	flushWait time.Duration
	// cassette, when set, carries the model's and remote MCP servers'
	// HTTP traffic (lode run --record, --replay).
	cassette *cassette.Recorder
	// elicit asks the person what MCP servers elicit (lode chat).
	elicit mcp.Elicitor
	// temporal runs worker, run and resume --temporal; nil in a build
	// without Temporal, which refuses --temporal.
	temporal Temporal
	// a2aServer serves lode serve --a2a; nil in a build without A2A.
	a2aServer A2AServer
	// a2a mounts lode.yaml's a2a: agents; nil in a build without A2A,
	// which refuses them.
	a2a A2ACaller
}

// Main runs the lode command with the process's arguments, streams and
// signals, and exits with the command's exit code.
func Main(opts ...Option) {
	// OpenTelemetry reports a failed export here; one line, like every
	// other complaint of the command.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		fmt.Fprintln(os.Stderr, "lode: tracing: "+oneLine(err.Error()))
	}))
	// SIGTERM ends the command's context: run and chat stop and exit 143,
	// serve stops serving and exits 0.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	code := Run(ctx, os.Args[1:], opts...)
	stop()
	os.Exit(code)
}

// Run runs the lode command with args (without the program's name) and
// returns its exit code, as the usage text documents them. It reads the
// process's standard streams and environment unless WithIO says otherwise;
// ending ctx stops it as SIGTERM stops Main.
func Run(ctx context.Context, args []string, opts ...Option) int {
	e := env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	for _, o := range opts {
		o(&e)
	}
	return run(ctx, e, args)
}

// WithIO gives Run the command's standard input, output and error; a nil
// one keeps the process's own.
func WithIO(stdin io.Reader, stdout, stderr io.Writer) Option {
	return func(e *env) {
		if stdin != nil {
			e.stdin = stdin
		}
		if stdout != nil {
			e.stdout = stdout
		}
		if stderr != nil {
			e.stderr = stderr
		}
	}
}

// Exit codes, as the usage text documents them.
const (
	exitError       = 1
	exitUsage       = 2
	exitPaused      = 3   // run or resume stopped with calls waiting for approval
	exitTripped     = 4   // a guard stopped the turn
	exitInterrupted = 130 // Ctrl-C (SIGINT) stopped run
	exitTerminated  = 143 // SIGTERM stopped run or chat
)

// versionText describes the build: the module's version ("(devel)" for a
// build from a clone), the commit it was built from when Go recorded it
// (else that it is unknown), and the Go release.
func versionText(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		return "lode (unknown version: built without module information)\n" + runtime.Version() + "\n"
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "lode %s\n", version)
	if bi.Main.Path != "" {
		fmt.Fprintf(&b, "module %s\n", bi.Main.Path)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		fmt.Fprintf(&b, "commit %s", rev)
		if t := settings["vcs.time"]; t != "" {
			fmt.Fprintf(&b, " (%s)", t)
		}
		if settings["vcs.modified"] == "true" {
			b.WriteString(" with uncommitted changes")
		}
		b.WriteString("\n")
	} else {
		// go run, a build outside a clone, -buildvcs=false.
		b.WriteString("commit unknown (built without VCS stamps)\n")
	}
	fmt.Fprintf(&b, "%s\n", bi.GoVersion)
	return b.String()
}

// usageError is a mistake in the command line: exit code 2.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func run(ctx context.Context, e env, args []string) int {
	// The answer, tool lines, span lines and the prompt come from several
	// goroutines; each write goes out whole.
	e.stdout, e.stderr = &lockedWriter{w: e.stdout}, &lockedWriter{w: e.stderr}
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return exitUsage
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "demo":
		err = cmdDemo(ctx, e, rest)
	case "run":
		err = cmdRun(ctx, e, rest)
	case "chat":
		err = cmdChat(ctx, e, rest)
	case "resume":
		err = cmdResume(ctx, e, rest)
	case "recover":
		err = cmdRecover(ctx, e, rest)
	case "worker":
		err = cmdWorker(ctx, e, rest)
	case "tools":
		err = cmdTools(ctx, e, rest)
	case "threads":
		err = cmdThreads(ctx, e, rest)
	case "fork":
		err = cmdFork(ctx, e, rest)
	case "serve":
		err = cmdServe(ctx, e, rest)
	case "web":
		err = cmdWeb(ctx, e, rest)
	case "policy":
		err = cmdPolicy(ctx, e, rest)
	case "mcp":
		err = cmdMCP(ctx, e, rest)
	case "eval":
		err = cmdEval(ctx, e, rest)
	case "help", "-h", "--help":
		fmt.Fprint(e.stdout, usage)
		return 0
	case "version", "--version":
		if err = noArgs("lode "+cmd, rest); err == nil {
			fmt.Fprint(e.stdout, versionText(debug.ReadBuildInfo()))
		}
	default:
		err = usageError{fmt.Sprintf("unknown command %q (lode help lists the commands)", cmd)}
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case ctx.Err() != nil:
		// Only SIGTERM (or whoever embeds run) ends ctx itself.
		fmt.Fprintln(e.stderr, "lode: terminated")
		return exitTerminated
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(e.stderr, "lode: interrupted")
		return exitInterrupted
	}
	if te, ok := errors.AsType[*loop.TripError](err); ok {
		fmt.Fprintln(e.stderr, "lode: "+oneLine(tripMessage(te)))
		return exitTripped
	}
	fmt.Fprintln(e.stderr, "lode: "+oneLine(err.Error()))
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	var pe pausedErr
	if errors.As(err, &pe) {
		return exitPaused
	}
	return exitError
}

// oneLine keeps an error to one line, as a terminal user reads it.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return s
}

// lockedWriter serialises the writes of several goroutines to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
