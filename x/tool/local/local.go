package local

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/pack"
	"github.com/lodeworks/lode/x/tool/query"
)

// Name is the pack's name, and its key in the tools: map.
const Name = "local"

// defaultSelect is what local_query returns of each item when the query
// has no select.
var defaultSelect = []string{"id", "title", "state", "stateType", "labels"}

//go:embed skills
var skillFiles embed.FS

// Skills are the skills the pack ships: a folder per skill, each holding a
// SKILL.md.
func Skills() fs.FS {
	sub, err := fs.Sub(skillFiles, "skills")
	if err != nil {
		panic(err) // the folder is embedded
	}
	return sub
}

// Option configures the pack.
type Option func(*board)

// WithClock sets the clock that stamps comments (default time.Now).
func WithClock(now func() time.Time) Option { return func(b *board) { b.now = now } }

// WithQueryLimits sets the limits of local_query (see query.Limits).
func WithQueryLimits(l query.Limits) Option { return func(b *board) { b.limits = l } }

type board struct {
	now    func() time.Time
	limits query.Limits
	// mu serialises read-modify-write of items within the process.
	mu sync.Mutex
}

// New returns the local pack. Its folder is the path option of the
// settings it is mounted with (tools.local.path), which the router passes
// to every call.
func New(opts ...Option) *pack.Bundle {
	b := &board{now: time.Now}
	for _, o := range opts {
		o(b)
	}
	qopts := []query.Option{query.WithLimits(b.limits)}
	return pack.MustNew(Name,
		pack.Validate(ValidateOptions),
		pack.Skills(Skills()),
		pack.Spec(tool.Tool{
			Name: "local_query",
			Description: "Find items on the local board: filter, select, sort and page them. " +
				"Returns items (by default id, title, state, stateType, labels), the total that matched, " +
				"next_cursor for the next page, and skipped: item files that could not be read, and why.",
			Schema: query.Schema(qopts...),
			// The board is the user's own: reading it labels the thread private.
			Hints: tool.Hints{ReadOnly: true, Idempotent: true, Private: true},
		}, b.query),
		pack.Tool("local_get", "Get one item of the local board by id, with every field and its body.", b.get,
			tool.WithHints(tool.Hints{ReadOnly: true, Idempotent: true, Private: true})),
		pack.Tool("local_create", "Create an item on the local board. Without an id, the next free number is used.", b.create),
		pack.Tool("local_update_state", "Set an item's state (and optionally its stateType).", b.updateState,
			tool.WithHints(tool.Hints{Idempotent: true})),
		pack.Tool("local_add_label", "Add a label to an item; adding one it already has changes nothing.", b.addLabel,
			tool.WithHints(tool.Hints{Idempotent: true})),
		pack.Tool("local_comment", "Add a comment to an item.", b.comment),
	)
}

// ValidateOptions checks the pack's options: path, required, naming an
// existing directory.
func ValidateOptions(opts map[string]any) error {
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k != "path" {
			return fmt.Errorf("unknown option %q (the local pack takes path)", k)
		}
	}
	_, err := folder(opts)
	return err
}

func folder(opts map[string]any) (string, error) {
	v, ok := opts["path"]
	if !ok || v == nil {
		return "", errors.New("path is required: the folder that holds the items")
	}
	p, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("path must be text, got %T", v)
	}
	if p == "" {
		return "", errors.New("path is required: the folder that holds the items")
	}
	st, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("path %q does not exist", p)
	case err != nil:
		return "", fmt.Errorf("path %q: %w", p, err)
	case !st.IsDir():
		return "", fmt.Errorf("path %q is not a directory", p)
	}
	return p, nil
}

// open opens the folder the call's settings name, as an os.Root: no path a
// call makes up can leave it.
func open(ctx context.Context) (*os.Root, *tool.Result) {
	s, _ := pack.SettingsFrom(ctx)
	p, err := folder(s.Options(Name))
	if err != nil {
		return nil, pack.Failuref("the local pack is not configured: tools.local: %v", err)
	}
	root, err := os.OpenRoot(p)
	if err != nil {
		return nil, pack.Failuref("cannot open the board folder: %v", err)
	}
	return root, nil
}

// QueryResult is what local_query returns.
type QueryResult struct {
	Items      []map[string]any `json:"items"`
	Total      int              `json:"total"`
	Offset     int              `json:"offset"`
	NextCursor string           `json:"next_cursor,omitempty"`
	// Skipped lists item files that could not be read, and why.
	Skipped []Skipped `json:"skipped,omitempty"`
}

func (b *board) query(ctx context.Context, args map[string]any) (any, error) {
	q, err := query.Parse(args, query.WithLimits(b.limits), query.DefaultSelect(defaultSelect...))
	if err != nil {
		return pack.Failure(err.Error()), nil
	}
	root, fail := open(ctx)
	if fail != nil {
		return fail, nil
	}
	defer root.Close()
	items, skipped, err := list(root)
	if err != nil {
		return pack.Failuref("cannot list the board folder: %v", err), nil
	}
	records := make([]map[string]any, 0, len(items))
	for _, it := range items {
		f, err := it.fields()
		if err != nil {
			skipped = append(skipped, Skipped{File: fileName(it.id), Reason: err.Error()})
			continue
		}
		records = append(records, f)
	}
	page := q.Run(records)
	for _, r := range page.Records {
		jsonSafe(r)
	}
	return pack.Success(QueryResult{Items: page.Records, Total: page.Total, Offset: page.Offset, NextCursor: page.NextCursor, Skipped: skipped}), nil
}

// IDArgs name one item.
type IDArgs struct {
	ID string `json:"id" jsonschema:"description=The item's id."`
}

// load opens the board and reads the item id; a failure is the result.
func load(ctx context.Context, id string) (*os.Root, *item, *tool.Result) {
	if err := validID(id); err != nil {
		return nil, nil, pack.Failure(err.Error())
	}
	root, fail := open(ctx)
	if fail != nil {
		return nil, nil, fail
	}
	it, err := read(root, id)
	if err != nil {
		root.Close()
		if errors.Is(err, errNotFound) {
			return nil, nil, pack.Failuref("no item with id %q", id)
		}
		return nil, nil, pack.Failuref("item %q cannot be read (%s): %v; fix or remove the file", id, fileName(id), err)
	}
	return root, it, nil
}

func (b *board) get(ctx context.Context, in IDArgs) (*tool.Result, error) {
	root, it, fail := load(ctx, in.ID)
	if fail != nil {
		return fail, nil
	}
	defer root.Close()
	return itemResult(it, true), nil
}

// itemResult renders an item: its fields, and its body when asked.
func itemResult(it *item, withBody bool) *tool.Result {
	f, err := it.fields()
	if err != nil {
		return pack.Failuref("item %q: %v", it.id, err)
	}
	jsonSafe(f)
	if withBody {
		f["body"] = string(it.body)
	}
	return pack.Success(f)
}

// CreateArgs describe a new item.
type CreateArgs struct {
	ID        string         `json:"id,omitempty" jsonschema:"description=The new item's id; omit for the next free number."`
	Title     string         `json:"title" jsonschema:"minLength=1,description=A one-line title."`
	State     string         `json:"state,omitempty" jsonschema:"description=Initial state (default open)."`
	StateType string         `json:"stateType,omitempty" jsonschema:"description=The state's category, e.g. unstarted, started, completed, canceled."`
	Labels    []string       `json:"labels,omitempty"`
	Body      string         `json:"body,omitempty" jsonschema:"description=Markdown description."`
	Fields    map[string]any `json:"fields,omitempty" jsonschema:"description=Other front matter fields, e.g. priority."`
}

func (b *board) create(ctx context.Context, in CreateArgs) (*tool.Result, error) {
	if in.ID != "" {
		if err := validID(in.ID); err != nil {
			return pack.Failure(err.Error()), nil
		}
	}
	for k := range in.Fields {
		if slices.Contains(coreKeys, k) || k == "body" {
			return pack.Failuref("fields.%s: set %s with its own argument, not in fields", k, k), nil
		}
	}
	if in.State == "" {
		in.State = "open"
	}
	root, fail := open(ctx)
	if fail != nil {
		return fail, nil
	}
	defer root.Close()
	b.mu.Lock()
	defer b.mu.Unlock()

	front := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	it := &item{front: front, doc: &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{front}}}
	it.set(keyID, str(""))
	it.set(keyTitle, str(in.Title))
	it.set(keyState, str(in.State))
	if in.StateType != "" {
		it.set(keyStateType, str(in.StateType))
	}
	if len(in.Labels) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
		for _, l := range in.Labels {
			if !slices.ContainsFunc(seq.Content, func(n *yaml.Node) bool { return n.Value == l }) {
				seq.Content = append(seq.Content, str(l))
			}
		}
		it.set(keyLabels, seq)
	}
	extra := make([]string, 0, len(in.Fields))
	for k := range in.Fields {
		extra = append(extra, k)
	}
	sort.Strings(extra)
	for _, k := range extra {
		var v yaml.Node
		if err := v.Encode(in.Fields[k]); err != nil {
			return pack.Failuref("fields.%s: %v", k, err), nil
		}
		it.set(k, &v)
	}
	if in.Body != "" {
		it.body = []byte(in.Body)
		if in.Body[len(in.Body)-1] != '\n' {
			it.body = append(it.body, '\n')
		}
	}

	ids := []string{in.ID}
	if in.ID == "" {
		ids = nextIDs(root, 5)
	}
	for _, id := range ids {
		it.id = id
		it.get(keyID).Value = id
		data, err := it.encode()
		if err != nil {
			return pack.Failuref("cannot encode the item: %v", err), nil
		}
		err = write(root, fileName(id), data, true)
		if errors.Is(err, fs.ErrExist) {
			if in.ID != "" {
				return pack.Failuref("an item with id %q already exists", id), nil
			}
			continue // taken meanwhile by another process: try the next
		}
		if err != nil {
			return pack.Failuref("cannot write %s: %v", fileName(id), err), nil
		}
		return itemResult(it, false), nil
	}
	return pack.Failure("cannot find a free id; give one"), nil
}

// nextIDs returns up to n candidate ids after the largest numeric one.
func nextIDs(root *os.Root, n int) []string {
	top := 0
	if d, err := root.Open("."); err == nil {
		names, _ := d.Readdirnames(-1)
		d.Close()
		for _, name := range names {
			if id, ok := cutMD(name); ok {
				if v, ok := numericID(id); ok && v > top {
					top = v
				}
			}
		}
	}
	// Numbers past the largest int would wrap to negative ids, which are
	// not valid: fewer candidates (or none) rather than those.
	out := make([]string, 0, n)
	for i := 1; i <= n && top <= math.MaxInt-i; i++ {
		out = append(out, strconv.Itoa(top+i))
	}
	return out
}

func cutMD(name string) (string, bool) {
	if len(name) > 3 && name[len(name)-3:] == ".md" {
		return name[:len(name)-3], true
	}
	return "", false
}

// modify reads id, lets change edit it and writes it back atomically.
// change returns false when it changed nothing, which skips the write.
func (b *board) modify(ctx context.Context, id string, change func(*item) (bool, *tool.Result)) *tool.Result {
	b.mu.Lock()
	defer b.mu.Unlock()
	root, it, fail := load(ctx, id)
	if fail != nil {
		return fail
	}
	defer root.Close()
	changed, fail := change(it)
	if fail != nil {
		return fail
	}
	if changed {
		data, err := it.encode()
		if err != nil {
			return pack.Failuref("cannot encode item %q: %v", id, err)
		}
		if err := write(root, fileName(id), data, false); err != nil {
			return pack.Failuref("cannot write %s: %v", fileName(id), err)
		}
	}
	return itemResult(it, false)
}

// StateArgs set an item's state.
type StateArgs struct {
	ID        string `json:"id" jsonschema:"description=The item's id."`
	State     string `json:"state" jsonschema:"minLength=1,description=The new state."`
	StateType string `json:"stateType,omitempty" jsonschema:"description=The new state's category; kept when omitted."`
}

func (b *board) updateState(ctx context.Context, in StateArgs) (*tool.Result, error) {
	return b.modify(ctx, in.ID, func(it *item) (bool, *tool.Result) {
		it.set(keyState, str(in.State))
		if in.StateType != "" {
			it.set(keyStateType, str(in.StateType))
		}
		return true, nil
	}), nil
}

// LabelArgs add a label.
type LabelArgs struct {
	ID    string `json:"id" jsonschema:"description=The item's id."`
	Label string `json:"label" jsonschema:"minLength=1"`
}

func (b *board) addLabel(ctx context.Context, in LabelArgs) (*tool.Result, error) {
	return b.modify(ctx, in.ID, func(it *item) (bool, *tool.Result) {
		if slices.Contains(it.labels(), in.Label) {
			return false, nil
		}
		seq := it.get(keyLabels)
		if seq == nil {
			seq = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
			it.set(keyLabels, seq)
		}
		seq.Content = append(seq.Content, str(in.Label))
		return true, nil
	}), nil
}

// CommentArgs add a comment.
type CommentArgs struct {
	ID   string `json:"id" jsonschema:"description=The item's id."`
	Text string `json:"text" jsonschema:"minLength=1"`
}

func (b *board) comment(ctx context.Context, in CommentArgs) (*tool.Result, error) {
	return b.modify(ctx, in.ID, func(it *item) (bool, *tool.Result) {
		seq := it.get(keyComments)
		if seq == nil {
			seq = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			it.set(keyComments, seq)
		}
		c := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		c.Content = append(c.Content,
			str("at"), str(b.now().UTC().Format(time.RFC3339)),
			str("text"), str(in.Text))
		seq.Content = append(seq.Content, c)
		return true, nil
	}), nil
}
