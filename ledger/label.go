package ledger

import (
	"fmt"
	"slices"
)

// Label is a flow label: what a thread's context has taken in. Labels
// only ever narrow what a caller may do (x/policy's flow rules read them);
// none is ever removed by lode, so what a model has read stays known for
// the rest of the thread.
type Label string

// The labels lode knows.
const (
	// LabelUntrusted: the context holds text written by outside parties
	// (a web page, mail, an MCP server's answer), which may carry
	// instructions the user never gave.
	LabelUntrusted Label = "untrusted"
	// LabelPrivate: the context holds the user's private data.
	LabelPrivate Label = "private"
)

// KnownLabels returns the labels lode knows, sorted.
func KnownLabels() []Label { return []Label{LabelPrivate, LabelUntrusted} }

// LabelKeyPrefix begins the metadata key of each label: one key per
// label, whose value names the tool that first brought the label in. One
// key each, set only when absent, rather than one list rewritten, so
// that the concurrent calls of one answer cannot lose each other's
// labels; and metadata, so that labels survive a reload, compaction
// (which never touches metadata), resume, a copy of the thread and a
// worker on another machine.
const LabelKeyPrefix = "lode.label."

// AddLabel records that st's context has taken in l, brought by the tool
// from. A label already present keeps the tool that first brought it, and
// nothing is written.
func AddLabel(st State, l Label, from string) error {
	if st == nil {
		return fmt.Errorf("ledger: add label %q: no thread", l)
	}
	if l == "" {
		return fmt.Errorf("ledger: add label: the label is empty")
	}
	key := LabelKeyPrefix + string(l)
	if _, ok := st.Metadata(key); ok {
		return nil
	}
	if from == "" {
		// The value says who brought the label; an empty one would read
		// as nothing there in stores that drop empty values.
		from = "unknown"
	}
	if err := st.SetMetadata(key, from); err != nil {
		return fmt.Errorf("ledger: add label %q to thread %s: %w", l, st.ID(), err)
	}
	return nil
}

// HasLabel reports whether st's context has taken in l, and which tool
// first brought it. A nil st has no labels.
func HasLabel(st State, l Label) (from string, ok bool) {
	if st == nil {
		return "", false
	}
	return st.Metadata(LabelKeyPrefix + string(l))
}

// Labels returns the known labels (KnownLabels) that st holds, sorted.
func Labels(st State) []Label {
	var out []Label
	for _, l := range KnownLabels() {
		if _, ok := HasLabel(st, l); ok {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}
