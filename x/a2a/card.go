package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/lodeworks/lode/tool"
)

// cardURL is where the card of the agent at base is: base itself when it
// names a .json file, else CardPath below it.
func cardURL(base *url.URL) *url.URL {
	if strings.HasSuffix(base.Path, ".json") {
		return base
	}
	return base.JoinPath(CardPath)
}

// fetchCard reads and parses the card, bounded by MaxCard; a card in 0.3's
// form is read into 1.0's.
func fetchCard(ctx context.Context, hc *http.Client, base *url.URL) (*a2a.AgentCard, error) {
	u := cardURL(base)
	where := redactURL(u)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCard, where, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("a2a: fetch the agent card at %s: %w", where, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s answered %s", ErrCard, where, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxCard+1))
	if err != nil {
		return nil, fmt.Errorf("a2a: read the agent card at %s: %w", where, err)
	}
	if len(body) > MaxCard {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrCard, where, MaxCard)
	}
	// The parser decodes into fixed types, so a field of the wrong type
	// fails here rather than later; a card that is not an object too.
	if !json.Valid(body) {
		return nil, fmt.Errorf("%w: %s is not JSON", ErrCard, where)
	}
	card, err := a2av0.NewAgentCardParser()(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCard, where, err)
	}
	if err := checkInterfaces(card); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCard, where, err)
	}
	return card, nil
}

// checkInterfaces keeps the card's endpoints lode can use: an http(s)
// URL with a binding it speaks; none is an error.
func checkInterfaces(card *a2a.AgentCard) error {
	var ok []*a2a.AgentInterface
	for _, in := range card.SupportedInterfaces {
		if in == nil {
			continue
		}
		if in.ProtocolBinding != a2a.TransportProtocolJSONRPC && in.ProtocolBinding != a2a.TransportProtocolHTTPJSON {
			continue
		}
		u, err := url.Parse(in.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			continue
		}
		ok = append(ok, in)
	}
	if len(ok) == 0 {
		return fmt.Errorf("it lists no endpoint lode can call (an http or https URL speaking JSONRPC or HTTP+JSON)")
	}
	card.SupportedInterfaces = ok
	return nil
}

// skillSchema is the arguments of every skill's tool.
const skillSchema = `{"type":"object","properties":{` +
	`"task":{"type":"string","minLength":1,"description":"What to ask the agent, in plain words, with everything it needs to know: it sees nothing of this conversation."},` +
	`"task_id":{"type":"string","description":"Only to answer a question the agent asked: the task_id its question gave."},` +
	`"context_id":{"type":"string","description":"Only with task_id: the context_id the agent's question gave."}},` +
	`"required":["task"],"additionalProperties":false}`

// readSkills makes a tool of each skill, refusing a card with more than
// MaxSkills, a skill without an ID, or two whose tool names would clash.
func (r *Remote) readSkills() error {
	card := r.card
	if len(card.Skills) == 0 {
		return fmt.Errorf("%w: the agent %q lists no skills, so there is nothing to call", ErrCard, card.Name)
	}
	if len(card.Skills) > MaxSkills {
		return fmt.Errorf("%w: the agent %q lists %d skills; at most %d are mounted", ErrCard, card.Name, len(card.Skills), MaxSkills)
	}
	r.skills = make(map[string]a2a.AgentSkill, len(card.Skills))
	seen := make(map[string]string, len(card.Skills))
	for i, s := range card.Skills {
		if strings.TrimSpace(s.ID) == "" {
			return fmt.Errorf("%w: skill %d of the agent %q has no id", ErrCard, i+1, card.Name)
		}
		name := tool.SafeName(s.ID)
		if first, dup := seen[name]; dup {
			return fmt.Errorf("%w: the agent %q has skills %q and %q, which would both be the tool %q", ErrCard, card.Name, first, s.ID, name)
		}
		seen[name] = s.ID
		r.skills[name] = s
		t := tool.Tool{
			Name:        name,
			Title:       bound(s.Name, 200),
			Description: r.describe(s),
			Schema:      []byte(skillSchema),
			// The call's own bound, and time to cancel the task after
			// it, so that the call's own result (which says so) comes
			// before the handler gives up; the handler's default is
			// shorter.
			Timeout: r.cfg.timeout + cancelWait + 5*time.Second,
		}
		t.Hints.OpenWorld = true
		if r.cfg.readOnly {
			t.Hints.ReadOnly = true
		} else {
			t.Hints.Destructive = true
		}
		t.Hints.Untrusted = !r.cfg.labels.TrustOutput
		t.Hints.Private = r.cfg.labels.Private
		t.Hints.SendsOut = r.cfg.labels.SendsOut
		r.tools = append(r.tools, t)
	}
	return nil
}

// describe is what the model reads of a skill: who does it, what it
// does, a few examples; bounded, since a card is written by others.
func (r *Remote) describe(s a2a.AgentSkill) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Ask the remote agent %q (A2A) to do this: ", bound(r.card.Name, 100))
	if s.Name != "" {
		b.WriteString(bound(s.Name, 200))
		b.WriteString(". ")
	}
	b.WriteString(bound(s.Description, maxDescription))
	for i, ex := range s.Examples {
		if i == 3 {
			break
		}
		if i == 0 {
			b.WriteString("\nExamples:")
		}
		b.WriteString("\n- ")
		b.WriteString(bound(ex, 200))
	}
	return b.String()
}

// bound cuts s to at most n bytes, on a rune boundary, marking the cut.
func bound(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
