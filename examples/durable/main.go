// Command durable is an agent whose run outlives its process. start runs
// it on a thread of a file store, holding the thread's lease; kill the
// process with kill -9 while its tool runs, and recover, from another
// process, finishes the run once the lease has expired: the fetch tool is
// idempotent, so it runs again; a tool that is not would get an
// "interrupted" result instead.
//
//	durable -store DIR start      (prints "fetching ..." and hangs inside the tool when -hang is set)
//	durable -store DIR recover    (one pass; run it again until the lease has expired)
//
// The model is scripted, so it runs offline. When one machine is not
// enough, x/temporal/examples/durable (in x/temporal's module, which
// alone requires the Temporal SDK) runs the same agent as a Temporal
// workflow: any worker, on any machine sharing the store, continues the
// run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// lease is short so that a recover soon after a kill finds it expired.
const lease = 300 * time.Millisecond

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "durable:", err)
		os.Exit(1)
	}
}

// agent is the step: one idempotent tool, fetch, which hangs inside when
// hang is set, as a slow page would.
func agent(out io.Writer, hang bool) (*loop.Step, error) {
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
	return loop.New(
		loop.WithHandlers(xtool.NewHandler(reg, xtool.WithTimeout(time.Hour))),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
		loop.WithLease(lease),
	), nil
}

// model calls fetch, then answers with what the tool returned.
func model() provider.Provider {
	reply := func(req *provider.Request) ([]artifact.Artifact, error) {
		last := req.Turns[len(req.Turns)-1]
		for _, a := range last.Artifacts {
			if r, ok := a.(artifact.ToolResult); ok {
				return []artifact.Artifact{artifact.Text{Content: "Fetched: " + r.Content}}, nil
			}
		}
		return []artifact.Artifact{artifact.ToolCall{ID: "call_1", Name: "fetch", Arguments: `{"url":"https://example.org/"}`}}, nil
	}
	return script.Play(script.Func(reply), script.Func(reply))
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("durable", flag.ContinueOnError)
	storeDir := fs.String("store", "", "the ledger directory")
	hang := fs.Bool("hang", false, "hang inside the tool, to be killed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *storeDir == "" || fs.NArg() != 1 {
		return errors.New("usage: durable -store DIR [-hang] start | recover")
	}
	store, err := file.Open(*storeDir)
	if err != nil {
		return err
	}
	defer store.Close()
	step, err := agent(out, *hang)
	if err != nil {
		return err
	}
	switch fs.Arg(0) {
	case "start":
		st, err := store.Create(ctx, ledger.WithTurns(ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "What does example.org say?"}}}))
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "thread %s\n", st.ID())
		if _, err := step.Run(ctx, st, model()); err != nil {
			return err
		}
		return answer(out, st)
	case "recover":
		recs, err := step.Recover(ctx, store, model())
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			fmt.Fprintln(out, "nothing to recover")
		}
		for _, r := range recs {
			fmt.Fprintf(out, "recovered %s from %s (calls %v, run again %v), after %s\n", r.Thread, r.From, r.Calls, r.Rerun, r.PreviousOwner)
			if r.Err != nil {
				return r.Err
			}
			st, err := store.Load(ctx, r.Thread)
			if err != nil {
				return err
			}
			if err := answer(out, st); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown command %q: want start or recover", fs.Arg(0))
}

func answer(out io.Writer, st ledger.State) error {
	turns := st.Turns()
	last := turns[len(turns)-1]
	for _, a := range last.Artifacts {
		if t, ok := a.(artifact.Text); ok {
			fmt.Fprintln(out, t.Content)
			return nil
		}
	}
	return errors.New("the run ended without an answer")
}
