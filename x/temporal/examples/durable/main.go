// Command durable is examples/durable's agent on Temporal: the same
// idempotent fetch tool and scripted model, run as x/temporal's workflow,
// so that any worker, on any machine sharing the store, continues the run.
// Kill a worker with kill -9 inside its tool and another worker takes the
// call over once Temporal sees the first one's heartbeat stop; fetch is
// idempotent, so it runs again there (a tool that is not gets an
// "interrupted" result instead).
//
//	durable -temporal HOST:PORT -store DIR [-hang] worker   (until Ctrl-C or SIGTERM)
//	durable -temporal HOST:PORT -store DIR start            (prints the answer)
//
// scripts/temporal-dev.sh start runs a dev server to try it on. The model
// is scripted, so it runs offline; the test runs it under the SDK's test
// environment, with no server at all.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/temporal"
	xtool "github.com/lodeworks/lode/x/tool"
)

// taskQueue is where the example's workers wait for work.
const taskQueue = "durable-example"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "durable:", err)
		os.Exit(1)
	}
}

// agent is examples/durable's agent for a worker: one idempotent tool,
// fetch, which hangs inside when hang is set, as a slow page would.
func agent(store ledger.Store, out io.Writer, hang bool) (*temporal.Agent, error) {
	type in struct {
		URL string `json:"url" jsonschema:"the page to fetch"`
	}
	reg := tool.NewRegistry()
	err := tool.RegisterFunc(reg, "fetch", "Fetch a page.",
		func(ctx context.Context, a in) (string, error) {
			fmt.Fprintf(out, "fetching %s\n", a.URL)
			if hang {
				<-ctx.Done()
				return "", ctx.Err()
			}
			return "the page says: hello", nil
		}, tool.WithHints(tool.Hints{Idempotent: true, ReadOnly: true}))
	if err != nil {
		return nil, err
	}
	return temporal.New(store, model{},
		temporal.WithHandler(xtool.NewHandler(reg, xtool.WithTimeout(time.Hour))),
		temporal.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)))
}

// model calls fetch, then answers with what the tool returned, on every
// run a worker is given.
type model struct{}

func (model) Invoke(_ context.Context, req *provider.Request) iter.Seq2[artifact.Artifact, error] {
	answer := []artifact.Artifact{artifact.ToolCall{ID: "call_1", Name: "fetch", Arguments: `{"url":"https://example.org/"}`}}
	last := req.Turns[len(req.Turns)-1]
	for _, a := range last.Artifacts {
		if r, ok := a.(artifact.ToolResult); ok {
			answer = []artifact.Artifact{artifact.Text{Content: "Fetched: " + r.Content}}
		}
	}
	return func(yield func(artifact.Artifact, error) bool) {
		for _, a := range answer {
			if !yield(a, nil) {
				return
			}
		}
	}
}

// prompt stores a new thread with the question, as an application does
// before it starts a run.
func prompt(ctx context.Context, store ledger.Store) (string, error) {
	st, err := store.Create(ctx, ledger.WithTurns(ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "What does example.org say?"}}}))
	if err != nil {
		return "", err
	}
	defer st.Close()
	return st.ID(), nil
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("durable", flag.ContinueOnError)
	addr := fs.String("temporal", "127.0.0.1:7233", "HOST:PORT of the Temporal frontend")
	storeDir := fs.String("store", "", "the ledger directory every worker shares")
	hang := fs.Bool("hang", false, "hang inside the tool, to be killed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *storeDir == "" || fs.NArg() != 1 {
		return errors.New("usage: durable -temporal HOST:PORT -store DIR [-hang] worker | start")
	}
	if cmd := fs.Arg(0); cmd != "worker" && cmd != "start" {
		return fmt.Errorf("unknown command %q: want worker or start", cmd)
	}
	store, err := file.Open(*storeDir)
	if err != nil {
		return err
	}
	defer store.Close()
	c, err := client.Dial(client.Options{HostPort: *addr})
	if err != nil {
		return err
	}
	defer c.Close()
	switch fs.Arg(0) {
	case "worker":
		a, err := agent(store, out, *hang)
		if err != nil {
			return err
		}
		w := temporal.NewWorker(c, taskQueue, a, worker.Options{})
		if err := w.Start(); err != nil {
			return err
		}
		fmt.Fprintln(out, "worker started")
		<-ctx.Done()
		w.Stop()
		return nil
	case "start":
		id, err := prompt(ctx, store)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "thread %s\n", id)
		r, err := temporal.Start(ctx, c, taskQueue, temporal.RunInput{Thread: id})
		if err != nil {
			return err
		}
		var res temporal.RunOutput
		if err := r.Get(ctx, &res); err != nil {
			return err
		}
		fmt.Fprintln(out, res.Answer)
		return nil
	}
	panic("unreachable: the command was checked")
}
