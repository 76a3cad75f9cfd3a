package guard

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/internal/secrets"
	"github.com/lodeworks/lode/loop"
)

// Secrets stops any checkpoint whose content holds one of values, as it
// is or as JSON or URL escaping writes it (the forms x/cassette scrubs
// from recordings): a model asked to print the API key, a tool that
// returns a token, a call that would send one out. Empty values are
// skipped; with none, the guard passes everything. The reason names no
// secret.
func Secrets(values ...string) *Guard {
	var forms []string
	seen := map[string]bool{}
	for _, v := range values {
		if v == "" {
			continue
		}
		for _, f := range secrets.Forms(v) {
			if f != "" && !seen[f] {
				seen[f] = true
				forms = append(forms, f)
			}
		}
	}
	return New("secrets", func(_ context.Context, c loop.Check) (string, error) {
		text := Content(c)
		for _, f := range forms {
			if strings.Contains(text, f) {
				return fmt.Sprintf("the %s holds a secret lode was given (%d characters)", what(c.At), len(f)), nil
			}
		}
		return "", nil
	})
}

// MaxBytes stops content at checkpoint at that is longer than n bytes: a
// message pasted whole, a call's arguments grown to smuggle a file out, a
// result large enough to bury an instruction. n < 1 passes everything.
func MaxBytes(at string, n int) *Guard {
	return New("max-bytes-"+at, func(_ context.Context, c loop.Check) (string, error) {
		if size := len(Content(c)); n > 0 && size > n {
			return fmt.Sprintf("the %s is %d bytes, over the %d allowed", what(c.At), size, n), nil
		}
		return "", nil
	}, at)
}

// HiddenText stops a message or a tool result that carries characters a
// person does not see but a model reads: Unicode tag characters
// (U+E0000–U+E007F, which spell ASCII invisibly), bidirectional overrides
// and isolates (U+202A–U+202E, U+2066–U+2069), and runs of zero-width
// characters. Text that is not valid UTF-8 is stopped too.
func HiddenText() *Guard {
	return New("hidden-text", func(_ context.Context, c loop.Check) (string, error) {
		text := Content(c)
		if !utf8.ValidString(text) {
			return fmt.Sprintf("the %s is not valid UTF-8", what(c.At)), nil
		}
		zw := 0
		for i, r := range text {
			switch {
			case r >= 0xE0000 && r <= 0xE007F:
				return fmt.Sprintf("the %s hides text in Unicode tag characters (at byte %d)", what(c.At), i), nil
			case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
				return fmt.Sprintf("the %s holds a bidirectional control character U+%04X (at byte %d)", what(c.At), r, i), nil
			case r == 0x200B || r == 0x200C || r == 0x200D || r == 0x2060 || r == 0xFEFF:
				if zw++; zw >= maxZeroWidth {
					return fmt.Sprintf("the %s holds a run of %d zero-width characters (at byte %d)", what(c.At), zw, i), nil
				}
			default:
				zw = 0
			}
		}
		return "", nil
	}, artifact.AtInput, artifact.AtResult)
}

// maxZeroWidth is the run of zero-width characters HiddenText stops:
// emoji sequences join with one at a time, hidden payloads need many.
const maxZeroWidth = 4

// injectionPhrases are the common phrasings of an instruction injected
// into content a tool fetched. See the package doc for what a list like
// this can and cannot do.
var injectionPhrases = []string{
	`ignore (all |any )?(the |your )?(previous|prior|above|earlier) (instructions|directions|prompts?|rules)`,
	`disregard (all |any )?(the |your )?(previous|prior|above|earlier) (instructions|directions|prompts?|rules)`,
	`forget (all |everything )?(you were told|your instructions|previous instructions)`,
	`new (system )?instructions?:`,
	`(^|\n)\s*(system|assistant)\s*:`,
	`<\|?(im_start|system|endoftext)\|?>`,
	`you are now (in )?(developer|dan|jailbreak|unrestricted)`,
	`do not (tell|inform|alert) the user`,
	`important (message|instructions?) (for|to) (the )?(ai|assistant|model|agent)`,
}

// Injection stops tool results that carry a common phrasing of an
// injected instruction (case-insensitive). It is a tripwire for careless
// attacks, not a defence: see the package doc.
func Injection() *Guard {
	g, err := Pattern("injection", "reads like an instruction to the model", strings.Join(injectionPhrases, "|"), nil, artifact.AtResult)
	if err != nil {
		panic(err) // the phrases are constants
	}
	return g
}

// Pattern stops content at the checkpoints in at (all when none) that
// matches the regular expression expr (RE2 syntax, case-insensitive).
// reason completes the trip's "the tool's result …" ("reads like an
// instruction"); "" gives "matches EXPR". tools, when given, limits call and result checks to the
// calls of those tools (names as mounted); message and answer checks
// ignore it.
func Pattern(name, reason, expr string, tools []string, at ...string) (*Guard, error) {
	re, err := regexp.Compile("(?i)" + expr)
	if err != nil {
		return nil, fmt.Errorf("guard %s: pattern %q: %w", name, expr, err)
	}
	if reason == "" {
		reason = "matches " + expr
	}
	return New(name, func(_ context.Context, c loop.Check) (string, error) {
		if !forTool(c, tools) {
			return "", nil
		}
		if loc := re.FindStringIndex(Content(c)); loc != nil {
			return fmt.Sprintf("the %s %s", what(c.At), reason), nil
		}
		return "", nil
	}, at...), nil
}

// forTool reports whether c is about a call of one of tools (every call
// when tools is empty, every message and answer).
func forTool(c loop.Check, tools []string) bool {
	if len(tools) == 0 || (c.At != artifact.AtCall && c.At != artifact.AtResult) {
		return true
	}
	for _, t := range tools {
		if t == c.Call.Name || strings.HasPrefix(c.Call.Name, t+"__") {
			return true
		}
	}
	return false
}

// what names a checkpoint's content in a reason.
func what(at string) string {
	switch at {
	case artifact.AtInput:
		return "message"
	case artifact.AtCall:
		return "call's arguments"
	case artifact.AtResult:
		return "tool's result"
	case artifact.AtOutput:
		return "answer"
	}
	return "content"
}
