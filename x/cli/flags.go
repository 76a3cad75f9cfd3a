package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// parseFlags reads a command's flags wherever they stand among its other
// arguments, so that "lode run "hi" --model m" means what it says; "--"
// ends the flags, for arguments that start with "-". It returns the other
// arguments in order.
func parseFlags(fs *flag.FlagSet, e env, args []string) ([]string, error) {
	// The flag package prints the whole help after any mistake; a mistake
	// is one line (main prints it), and only -h prints the help.
	help := fs.Usage
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	defer func() { fs.Usage = help; fs.SetOutput(e.stderr) }()
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(e.stderr)
				help()
				return nil, err
			}
			msg := err.Error()
			hint := ""
			if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
				hint = suggestFlag(fs, name)
				msg += hint
			}
			// A close flag says it was a typo, not a prompt's word.
			if len(rest) > 0 && hint == "" {
				msg += ` (flags may come before or after the other arguments; put -- before an argument that starts with "-")`
			}
			return nil, usageError{msg}
		}
		left := fs.Args()
		if endedByTerminator(fs, args[:len(args)-len(left)]) {
			return append(rest, left...), nil
		}
		if len(left) == 0 {
			return rest, nil
		}
		rest = append(rest, left[0])
		args = left[1:]
	}
}

// endedByTerminator reports whether the arguments a Parse consumed end
// with the "--" that ends the flags, rather than with a flag's value that
// happens to be "--" (--system --).
func endedByTerminator(fs *flag.FlagSet, used []string) bool {
	n := len(used)
	if n == 0 || used[n-1] != "--" {
		return false
	}
	if n == 1 {
		return true
	}
	prev := strings.TrimLeft(used[n-2], "-")
	if !strings.HasPrefix(used[n-2], "-") || strings.Contains(prev, "=") {
		return true
	}
	f := fs.Lookup(prev)
	if f == nil {
		return true
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// noArgs refuses arguments to a command that takes only flags.
func noArgs(cmd string, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Sprintf("%s takes no arguments; got %q", cmd, args[0])}
	}
	return nil
}

// describe gives a command's -h its synopsis and, after the flags, notes.
// The flags named hidden still work and are left out of the list (an old
// spelling kept for the scripts that use it).
func describe(fs *flag.FlagSet, synopsis, notes string, hidden ...string) {
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "usage: %s\n\nflags (before or after the other arguments; -- ends them):\n", synopsis)
		shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
		shown.SetOutput(out)
		fs.VisitAll(func(f *flag.Flag) {
			if !slices.Contains(hidden, f.Name) {
				shown.Var(f.Value, f.Name, f.Usage)
			}
		})
		shown.PrintDefaults()
		if notes != "" {
			fmt.Fprintf(out, "\n%s\n", notes)
		}
	}
}

// suggestFlag is " (did you mean --NAME?)" for the flag of fs closest to a
// mistyped name, or "" when none is close: at most two edits apart, or
// one name the start of the other.
func suggestFlag(fs *flag.FlagSet, typed string) string {
	typed = strings.TrimLeft(typed, "-")
	best, dist := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage == "" || strings.HasPrefix(f.Usage, "deprecated") {
			return
		}
		d := editDistance(typed, f.Name)
		if d > 2 && len(typed) >= 3 && (strings.HasPrefix(f.Name, typed) || strings.HasPrefix(typed, f.Name)) {
			d = 2
		}
		if d < dist {
			best, dist = f.Name, d
		}
	})
	if best == "" {
		return ""
	}
	return " (did you mean --" + best + "?)"
}

// editDistance counts the insertions, deletions, substitutions and
// swaps of two neighbours that turn a into b.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
