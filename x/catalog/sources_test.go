package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/lodeworks/lode/x/catalog/internal/source"
)

// oracle is run by node with the pinned genai-prices package and the day
// models.json was generated. It lists every name a priced model's rules
// spell out (its id and each equals), and answers for each, at the host of
// the provider that lists it and without a host, what genai-prices' own
// calcPrice finds: the provider, the model and, for each text price at
// each tier of input tokens, the highest price of the day (a price the
// model lacks counts as the one it is billed as). It also writes an
// example base URL for each provider, checked with findProvider.
const oracle = `
const fs = require("fs"), vm = require("vm"), path = require("path");
const [pkg, day] = process.argv.slice(1);
const src = fs.readFileSync(path.join(pkg, "dist/index.js"), "utf8");
const a = src.indexOf("const E = ["), b = src.indexOf("], J = {");
if (a < 0 || b < a) throw new Error("genai-prices: the provider data is not where this test expects it");
const E = vm.runInNewContext("(" + src.slice(a + "const E = ".length, b + 1) + ")");
const keys = {input_mtok: "input", output_mtok: "output", cache_read_mtok: "cached_input", cache_write_mtok: "cache_write", output_reasoning_mtok: "reasoning"};
const stands = {cache_read_mtok: "input_mtok", cache_write_mtok: "input_mtok", output_reasoning_mtok: "output_mtok"};
const noon = new Date(day + "T12:00:00Z");
const times = [];
for (let m = 7; m < 1440; m += 15) times.push(new Date(Date.parse(day + "T00:00:00Z") + m * 60000));
const texty = (p) => Object.keys(p).some((k) => k in keys);
const rateAt = (v, input) => {
  if (typeof v === "number") return v;
  let p = v.base;
  for (const t of [...v.tiers].sort((x, y) => x.start - y.start)) if (input > t.start) p = t.price;
  return p;
};
function example(p) {
  let u = p.api_pattern
    .replace(/\(https\?:\/\/\)\?/g, "https://")
    .replace(/\(\[\^\.\]\*\\\.\)\?/g, "")
    .replace(/\(\.\*\\\.\)\?/g, "")
    .replace(/\(api\\\.\)\?/g, "api.")
    .replace(/\[\^\/\]\+/g, "acct")
    .replace(/\[a-z0-9-\]\+/g, "us-east-1")
    .replace(/\(i\)\?/g, "")
    .replace(/\(\?:\/\|\$\)|\(\/\|\$\)/g, "")
    .replace(/\(\?:([^|)]*)(\|[^)]*)?\)/g, "$1")
    .replace(/\\(.)/g, "$1");
  if (u.endsWith(".")) u += "ai";
  return u + "/v1";
}
function names(rule, out) {
  if (rule.equals) out.add(rule.equals.toLowerCase());
  for (const r of rule.or || []) names(r, out);
  return out;
}
import(path.join(pkg, "dist/index.js")).then((gp) => {
  function answer(name, url) {
    const opts = url ? {providerApiUrl: url} : {};
    let r;
    try {
      r = gp.calcPrice({input_tokens: 1}, name, {...opts, timestamp: noon});
    } catch (e) {
      return {name, url, error: String(e)};
    }
    if (!r) return {name, url};
    const byTime = Array.isArray(r.model.prices) && r.model.prices.some((p) => p.constraint && p.constraint.type === "time_of_date");
    const sets = byTime ? times.map((t) => gp.calcPrice({input_tokens: 1}, name, {...opts, timestamp: t}).model_price) : [r.model_price];
    const starts = new Set([0]);
    for (const s of sets) for (const v of Object.values(s)) if (v && typeof v === "object") for (const t of v.tiers || []) starts.add(t.start + 1);
    const levels = [...starts].sort((x, y) => x - y);
    const rates = {};
    for (const k of Object.keys(keys)) {
      rates[keys[k]] = levels.map((l) => Math.max(...sets.map((s) => {
        const v = s[k] ?? (stands[k] ? s[stands[k]] : undefined);
        return v === undefined ? 0 : rateAt(v, l);
      })));
    }
    return {name, url, provider: r.provider.id, model: r.model.id, priced: sets.some(texty), levels, rates};
  }
  const hosts = {}, answers = [], bare = new Set();
  for (const p of E) {
    const u = example(p);
    const found = gp.findProvider({providerApiUrl: u});
    hosts[p.id] = found && found.id === p.id ? u : "";
    for (const m of p.models) {
      const sets = Array.isArray(m.prices) ? m.prices.map((x) => x.prices) : [m.prices];
      if (!sets.some(texty)) continue;
      for (const n of names(m.match, new Set([m.id.toLowerCase()]))) {
        if (hosts[p.id]) answers.push({...answer(n, hosts[p.id]), host: p.id});
        if (!bare.has(n)) {
          bare.add(n);
          answers.push(answer(n, ""));
        }
      }
    }
  }
  process.stdout.write(JSON.stringify({hosts, answers}));
});
`

type oracleAnswer struct {
	Name     string               `json:"name"`
	URL      string               `json:"url"`
	Host     string               `json:"host"`
	Error    string               `json:"error"`
	Provider string               `json:"provider"`
	Model    string               `json:"model"`
	Priced   bool                 `json:"priced"`
	Levels   []int64              `json:"levels"`
	Rates    map[string][]float64 `json:"rates"`
}

// requireSources fetches the pinned packages models.json names, as the
// generator does, and returns the folder of genai-prices' package. It
// skips when LODE_TEST_CATALOG=off and fails with the install step when
// node or npm is missing.
func requireSources(t *testing.T) string {
	t.Helper()
	if os.Getenv("LODE_TEST_CATALOG") == "off" {
		t.Skip("LODE_TEST_CATALOG=off: the catalog is not checked against its pinned sources")
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("catalog: checking the catalog against its pinned sources needs Node.js 18+ and npm (%s: %v); "+
				"install them (apt-get install nodejs npm) or set LODE_TEST_CATALOG=off to skip", tool, err)
		}
	}
	var f struct {
		Sources []source.Source `json:"sources"`
	}
	if err := json.Unmarshal(modelsJSON, &f); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, s := range f.Sources {
		if s.Package != "@pydantic/genai-prices" {
			continue
		}
		got, pkg, err := source.Fetch(dir, s.Package, s.Version)
		if err != nil {
			t.Fatalf("catalog: fetching the pinned %s@%s with npm (from its cache or the registry): %v; "+
				"check npm's registry access, or set LODE_TEST_CATALOG=off to skip", s.Package, s.Version, err)
		}
		if got.Integrity != s.Integrity {
			t.Fatalf("catalog: %s@%s has integrity %s, models.json was generated from %s", s.Package, s.Version, got.Integrity, s.Integrity)
		}
		return pkg
	}
	t.Fatal("catalog: models.json names no @pydantic/genai-prices source")
	return ""
}

// TestAgreesWithSources checks, for every name the pinned genai-prices
// prices (each priced model's id and the names its rules spell out), that
// Default, and Default at the host of the provider that lists it, price it
// as genai-prices' own calcPrice does with and without that host, at every
// tier, with the highest price of the day where it changes with the time
// of day.
func TestAgreesWithSources(t *testing.T) {
	pkg := requireSources(t)
	cat := Default()
	cmd := exec.Command("node", "-e", oracle, pkg, cat.Generated())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v: %s", err, stderr.String())
	}
	var out struct {
		Hosts   map[string]string `json:"hosts"`
		Answers []oracleAnswer    `json:"answers"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	hosted := make(map[string]*Catalog, len(out.Hosts))
	for id, u := range out.Hosts {
		if u == "" {
			t.Errorf("no example base URL for provider %s: teach the oracle's example() its api_pattern", id)
			continue
		}
		hosted[u] = cat.ForHost(u)
		if got := hosted[u].Host(); got != id {
			t.Errorf("ForHost(%q).Host() = %q, genai-prices finds %q", u, got, id)
		}
	}
	var checked, hostChecked, unclaimed, errs, mismatches int
	var report []string
	pricedAt := make(map[string]bool) // names genai-prices prices at some host
	for _, a := range out.Answers {
		if a.URL != "" && a.Priced {
			pricedAt[a.Name] = true
		}
	}
	for _, a := range out.Answers {
		switch {
		case a.Error != "":
			errs++
			t.Logf("genai-prices cannot price %q at %q: %s", a.Name, a.URL, a.Error)
			continue
		case a.Provider == "" && a.URL == "":
			// No provider's model_match claims the name: genai-prices
			// prices it only with a host, checked in that answer. Without
			// one the catalog still prices it, by some provider's rules.
			unclaimed++
			if m, ok := cat.Lookup(a.Name); pricedAt[a.Name] && (!ok || m.Prices == nil) {
				mismatches++
				report = append(report, fmt.Sprintf("%q without a host: unpriced, though genai-prices prices it at a host", a.Name))
			}
			continue
		case a.Provider == "" || !a.Priced:
			continue
		}
		c := cat
		if a.URL != "" {
			c = hosted[a.URL]
			hostChecked++
		}
		checked++
		if diff := disagree(c, a); diff != "" {
			mismatches++
			report = append(report, diff)
		}
	}
	slices.Sort(report)
	for i, r := range report {
		if i == 60 {
			t.Errorf("… and %d more", len(report)-i)
			break
		}
		t.Error(r)
	}
	t.Logf("checked %d priced names against genai-prices (%d at their provider's host, %d without a host); %d mismatches; "+
		"%d names no provider claims without a host (checked only to be priced); %d the source cannot price", checked, hostChecked, checked-hostChecked, mismatches, unclaimed, errs)
}

// disagree says how c's answer for a differs from genai-prices', or "".
func disagree(c *Catalog, a oracleAnswer) string {
	where := "without a host"
	if a.URL != "" {
		where = "at " + a.Host
	}
	m, ok := c.Lookup(a.Name)
	if !ok || m.Prices == nil {
		return fmt.Sprintf("%q %s: unpriced; genai-prices: %s/%s", a.Name, where, a.Provider, a.Model)
	}
	// Compare at the source's tiers and at the catalog's own.
	levels := slices.Clone(a.Levels)
	for _, tier := range m.Prices.Tiers {
		levels = append(levels, tier.Above+1)
	}
	slices.Sort(levels)
	levels = slices.Compact(levels)
	var diffs []string
	for _, l := range levels {
		r := m.Prices.rates(l)
		ours := map[string]float64{"input": r.Input, "output": r.Output, "cached_input": or(r.CachedInput, r.Input),
			"cache_write": or(r.CacheWrite, r.Input), "reasoning": or(r.Reasoning, r.Output)}
		for _, k := range []string{"input", "output", "cached_input", "cache_write", "reasoning"} {
			i, _ := slices.BinarySearch(a.Levels, l+1) // the source's last level at or below l
			if want := a.Rates[k][max(i-1, 0)]; ours[k] != want {
				at := "base"
				if l > 0 {
					at = fmt.Sprintf("above %d input tokens", l-1)
				}
				diffs = append(diffs, fmt.Sprintf("%s %s %v, want %v", at, k, ours[k], want))
			}
		}
	}
	if diffs == nil {
		return ""
	}
	return fmt.Sprintf("%q %s: catalog %s/%s, genai-prices %s/%s: %s", a.Name, where, m.Provider, m.Name, a.Provider, a.Model, strings.Join(diffs, ", "))
}
