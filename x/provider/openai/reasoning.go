package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/lodeworks/lode/artifact"
)

// Structured reasoning (reasoning_details) is a list of typed items:
// reasoning.text (text, often a signature), reasoning.summary (summary) and
// reasoning.encrypted (data). A server that streams it sends each item in
// fragments that share the item's index; detailsAcc joins the fragments of
// an item — text and summary are concatenated, any other member is taken
// from the first fragment that has it — and otherwise keeps every member,
// known or not, as the server wrote it. A whole answer's list is kept byte
// for byte.
type detailsAcc struct {
	items   []*detailItem
	byIndex map[string]*detailItem
	whole   json.RawMessage
}

type detailItem struct {
	raw    []byte // as received, while no fragment was merged in
	keys   []string
	vals   map[string]json.RawMessage
	typ    string
	index  string
	merged bool
}

var errNotList = errors.New("not a JSON list of objects")

// add takes the reasoning_details of one chunk and returns the reasoning
// text they carry.
func (d *detailsAcc) add(raw json.RawMessage) (string, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", fmt.Errorf("%w: %w", errNotList, err)
	}
	var text strings.Builder
	for _, r := range list {
		it, err := parseItem(r)
		if err != nil {
			return "", err
		}
		text.WriteString(it.text())
		var into *detailItem
		if it.index != "" {
			into = d.byIndex[it.index]
		} else if n := len(d.items); n > 0 {
			last := d.items[n-1]
			if last.index == "" && last.typ == it.typ && it.textKey() != "" {
				into = last
			}
		}
		if into == nil {
			d.items = append(d.items, it)
			if it.index != "" {
				if d.byIndex == nil {
					d.byIndex = make(map[string]*detailItem)
				}
				d.byIndex[it.index] = it
			}
			continue
		}
		if err := into.merge(it); err != nil {
			return "", err
		}
	}
	return text.String(), nil
}

func parseItem(raw json.RawMessage) (*detailItem, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errNotList
	}
	it := &detailItem{raw: raw, vals: make(map[string]json.RawMessage)}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if _, dup := it.vals[k]; !dup {
			it.keys = append(it.keys, k)
		}
		it.vals[k] = v
	}
	_ = json.Unmarshal(it.vals["type"], &it.typ)
	if v, ok := it.vals["index"]; ok && !isNull(v) {
		it.index = string(v)
	}
	return it, nil
}

// textKey names the member that holds an item's readable reasoning.
func (it *detailItem) textKey() string {
	switch it.typ {
	case "reasoning.text":
		return "text"
	case "reasoning.summary":
		return "summary"
	}
	return ""
}

func (it *detailItem) text() string {
	var s string
	if k := it.textKey(); k != "" {
		_ = json.Unmarshal(it.vals[k], &s)
	}
	return s
}

func (it *detailItem) merge(o *detailItem) error {
	it.merged = true
	tk := it.textKey()
	for _, k := range o.keys {
		v := o.vals[k]
		cur, ok := it.vals[k]
		switch {
		case !ok:
			it.keys = append(it.keys, k)
			it.vals[k] = v
		case k == tk:
			var a, b string
			if json.Unmarshal(cur, &a) != nil || json.Unmarshal(v, &b) != nil {
				return errNotList
			}
			joined, err := marshalString(a + b)
			if err != nil {
				return err
			}
			it.vals[k] = joined
		case isNull(cur) || string(cur) == `""`:
			it.vals[k] = v
		}
	}
	return nil
}

// marshalString encodes s without escaping <, > and &, as servers write it.
func marshalString(s string) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func (it *detailItem) bytes() []byte {
	if !it.merged {
		return it.raw
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range it.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := marshalString(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(it.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// json is the whole list as it goes back to the server, or "" if none came.
func (d *detailsAcc) json() string {
	if d.whole != nil {
		return string(d.whole)
	}
	if len(d.items) == 0 {
		return ""
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, it := range d.items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it.bytes())
	}
	b.WriteByte(']')
	return b.String()
}

// wireUsage is usage in every spelling servers use.
type wireUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	// DeepSeek counts cache hits here.
	PromptCacheHitTokens int64 `json:"prompt_cache_hit_tokens"`
	// Moonshot counts them here.
	CachedTokens int64 `json:"cached_tokens"`
}

func (u *wireUsage) empty() bool {
	return u.PromptTokens == 0 && u.CompletionTokens == 0 && u.TotalTokens == 0
}

// usageOf reads usage. OpenAI counts reasoning inside completion_tokens;
// other servers count it beside them, and the numbers say which: reasoning
// larger than completion_tokens cannot be inside it (Vercel's gateway for
// Gemini, whose total_tokens leaves it out too), and a total_tokens above
// prompt plus output holds tokens no field names (Gemini's own OpenAI API,
// xAI), which are output all the same. Either way they go into
// OutputTokens (and unnamed ones into ReasoningTokens when the server named
// none), so that totals and token limits see them. Cached input is read
// from each spelling; where several are sent, they count the same tokens.
func usageOf(u *wireUsage) *artifact.Usage {
	out := &artifact.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		out.CachedInputTokens = d.CachedTokens
	}
	out.CachedInputTokens = max(out.CachedInputTokens, u.PromptCacheHitTokens, u.CachedTokens)
	if d := u.CompletionTokensDetails; d != nil {
		out.ReasoningTokens = max(d.ReasoningTokens, 0)
	}
	if out.ReasoningTokens > u.CompletionTokens {
		out.OutputTokens = addTokens(out.OutputTokens, out.ReasoningTokens)
	}
	if extra := u.TotalTokens - addTokens(u.PromptTokens, out.OutputTokens); extra > 0 && u.PromptTokens >= 0 {
		out.OutputTokens = addTokens(out.OutputTokens, extra)
		if out.ReasoningTokens == 0 {
			out.ReasoningTokens = extra
		}
	}
	return out
}

// addTokens adds two counts a server sent, stopping at the largest count
// rather than wrapping round to a negative one.
func addTokens(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
