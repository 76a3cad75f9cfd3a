package ledger

import (
	"sort"
	"strings"
)

// Label names a kind of content a thread's context has taken in, recorded
// as thread metadata so that it survives a reload.
type Label string

// The labels flow rules read.
const (
	// LabelUntrusted: the context holds text written by others (a page, a
	// mail, a memo), which may carry instructions.
	LabelUntrusted Label = "untrusted"
	// LabelPrivate: the context holds the user's private data.
	LabelPrivate Label = "private"
)

// LabelKeyPrefix prefixes the metadata key of each label; the value says
// where the label came from.
const LabelKeyPrefix = "lode.label."

// AddLabel records that st's context has taken in l, from says from where
// (a tool's name). A label already recorded keeps its first source.
func AddLabel(st State, l Label, from string) error {
	if _, ok := st.Metadata(LabelKeyPrefix + string(l)); ok {
		return nil
	}
	return st.SetMetadata(LabelKeyPrefix+string(l), from)
}

// HasLabel reports whether st's context has taken in l, and from where.
func HasLabel(st State, l Label) (from string, ok bool) {
	return st.Metadata(LabelKeyPrefix + string(l))
}

// Labels returns the labels st has recorded, sorted. It needs a State that
// lists its metadata (AllMetadata, as Thread has); on another it checks the
// labels this package defines.
func Labels(st State) []Label {
	var out []Label
	if all, ok := st.(interface{ AllMetadata() map[string]string }); ok {
		for k := range all.AllMetadata() {
			if l, ok := strings.CutPrefix(k, LabelKeyPrefix); ok {
				out = append(out, Label(l))
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
	for _, l := range []Label{LabelPrivate, LabelUntrusted} {
		if _, ok := HasLabel(st, l); ok {
			out = append(out, l)
		}
	}
	return out
}
