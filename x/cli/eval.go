package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/catalog"
	"github.com/lodeworks/lode/x/eval"
)

const evalUsage = `usage:
  lode eval [--json FILE] [--html FILE] SUITE.yaml
                 run a suite of eval cases and print a table; exit 1 if a case fails
  lode eval diff BEFORE.json AFTER.json
                 compare two reports case by case; exit 1 if a case got worse

A suite file lists cases, each a prompt, the tools it mounts (calculator,
filesystem: {root: DIR}), a model (script:, cassette: FILE or recorded: FILE
with name: MODEL) and what it expects (calls, calls_any_order, called,
not_called, refused, text_contains, text_excludes, text_matches, max_turns,
max_tokens, max_cost, max_time, fails). Costs use lode's model catalog.
`

func cmdEval(ctx context.Context, e env, args []string) error {
	if len(args) > 0 && args[0] == "diff" {
		return cmdEvalDiff(e, args[1:])
	}
	fs := flag.NewFlagSet("lode eval", flag.ContinueOnError)
	jsonPath := fs.String("json", "", "write the report as JSON to `FILE`")
	htmlPath := fs.String("html", "", "write the report as an HTML page to `FILE`")
	fs.Usage = func() { fmt.Fprint(fs.Output(), evalUsage) }
	rest, err := parseFlags(fs, e, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usageError{"lode eval takes one suite file\n" + evalUsage}
	}
	// A case's from: opens its store as every command opens one.
	suite, err := eval.LoadSuite(rest[0], eval.WithStores(func(ctx context.Context, spec string) (ledger.Store, error) {
		return openStore(ctx, spec)
	}))
	if err != nil {
		return err
	}
	suite.Pricer = catalog.Default()
	r := eval.RunSuite(ctx, suite)
	if err := r.WriteTable(e.stdout); err != nil {
		return err
	}
	for _, out := range []struct {
		path  string
		write func(f *os.File) error
	}{
		{*jsonPath, func(f *os.File) error { return r.WriteJSON(f) }},
		{*htmlPath, func(f *os.File) error { return r.WriteHTML(f) }},
	} {
		if out.path == "" {
			continue
		}
		f, err := os.Create(out.path)
		if err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		err = out.write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("eval: %s: %w", out.path, err)
		}
	}
	if n := r.Failed(); n > 0 {
		return fmt.Errorf("eval: %d of %d cases failed", n, len(r.Cases))
	}
	return nil
}

func cmdEvalDiff(e env, args []string) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(e.stdout, evalUsage)
		return flag.ErrHelp
	}
	if len(args) != 2 {
		return usageError{"lode eval diff takes two reports: BEFORE.json AFTER.json"}
	}
	a, err := eval.ReadReport(args[0])
	if err != nil {
		return err
	}
	b, err := eval.ReadReport(args[1])
	if err != nil {
		return err
	}
	changes := eval.Diff(a, b)
	if err := eval.WriteDiff(e.stdout, changes); err != nil {
		return err
	}
	worse := 0
	for _, c := range changes {
		if c.Verdict == eval.Worse {
			worse++
		}
	}
	if worse > 0 {
		return errors.New("eval: " + plural(worse, "case") + " got worse")
	}
	return nil
}
