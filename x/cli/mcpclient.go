package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// mcpFeatures is what lode offers a mounted MCP server beyond tool calls:
// the roots it may work in (the filesystem pack's root, when that pack is
// mounted), in lode chat elicitation at the terminal, and the token of
// lode mcp login.
func mcpFeatures(cfg *Config, s MCPServer) []mcp.Option {
	var opts []mcp.Option
	for _, pc := range cfg.Tools {
		if pc.Name != "filesystem" {
			continue
		}
		root, _ := pc.Options["root"].(string)
		if root == "" {
			root = "."
		}
		opts = append(opts, mcp.WithRoots(root))
	}
	if s.elicit != nil {
		opts = append(opts, mcp.WithElicitation(s.elicit))
	}
	if s.oauth != nil {
		opts = append(opts, mcp.WithOAuth(s.oauth))
	}
	if s.notify != nil {
		opts = append(opts, mcp.WithNotifications(s.notify))
	}
	return opts
}

// prepareMCP gives the MCP servers of a run what the command offers them:
// the terminal's elicitation (lode chat), the logins of lode mcp login,
// and a way for their progress reports and logs to reach the run's
// printer, once there is one (notes.to).
func prepareMCP(ctx context.Context, e env, cfg *Config) (*notes, error) {
	store, err := openTokenStore(e)
	if err != nil {
		store = nil
	}
	n := &notes{}
	for i := range cfg.MCP {
		s := &cfg.MCP[i]
		s.elicit = e.elicit
		s.notify = n.emit
		if s.oauth, err = mcpOAuth(ctx, e, store, *s); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// notes forwards MCP notifications to an emitter set after the servers
// are mounted; before that they are dropped.
type notes struct {
	mu sync.Mutex
	em loop.Emitter
}

func (n *notes) to(em loop.Emitter) {
	n.mu.Lock()
	n.em = em
	n.mu.Unlock()
}

func (n *notes) emit(ctx context.Context, ev mcp.Notification) {
	n.mu.Lock()
	em := n.em
	n.mu.Unlock()
	if em != nil {
		em.Emit(ctx, ev)
	}
}

// noteLines is an emitter writing each MCP notification as a line to w,
// one at a time: notifications come from every mounted server's reading
// goroutine.
func noteLines(w io.Writer) loop.Emitter {
	var mu sync.Mutex
	return loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
		if n, ok := ev.(mcp.Notification); ok {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintln(w, notificationLine(n))
		}
	})
}

// notificationLine is how a progress report or a log message shows.
func notificationLine(n mcp.Notification) string {
	if n.Kind == mcp.NotifyProgress {
		step := fmt.Sprintf("%g", n.Progress)
		if n.Total > 0 {
			step += fmt.Sprintf("/%g", n.Total)
		}
		line := fmt.Sprintf("  [%s] %s: %s", n.Server, n.Tool, step)
		if n.Message != "" {
			line += " " + n.Message
		}
		return line
	}
	msg := n.Message
	if msg == "" {
		b, _ := json.Marshal(n.Data)
		msg = string(b)
	}
	return fmt.Sprintf("  [%s] %s: %s", n.Server, n.Level, msg)
}

// terminalElicitor asks the person at the terminal what an MCP server
// elicits, reading answers from lines (the chat's input). Questions from
// calls running side by side are asked one after the other.
func terminalElicitor(w io.Writer, lines <-chan string) mcp.Elicitor {
	var mu sync.Mutex
	return func(ctx context.Context, req mcp.ElicitRequest) (mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "\nMCP server %s asks: %s\n", req.Server, req.Message)
		if req.Mode == mcp.ElicitURL {
			fmt.Fprintf(w, "open %s\n", req.URL)
		}
		prompt := "fill in the form? [y/n/c] "
		if req.Mode == mcp.ElicitURL {
			prompt = "done, or decline? [y/n/c] "
		}
		fmt.Fprint(w, prompt)
		for {
			ans, err := readLine(ctx, lines)
			if err != nil {
				return mcp.ElicitResult{}, err
			}
			switch strings.ToLower(ans) {
			case "y", "yes":
				if req.Mode == mcp.ElicitURL {
					return mcp.ElicitResult{Action: mcp.ElicitAccept}, nil
				}
				content, err := askForm(ctx, w, lines, req.Schema)
				if err != nil {
					return mcp.ElicitResult{}, err
				}
				return mcp.ElicitResult{Action: mcp.ElicitAccept, Content: content}, nil
			case "n", "no":
				return mcp.ElicitResult{Action: mcp.ElicitDecline}, nil
			case "c", "cancel":
				return mcp.ElicitResult{Action: mcp.ElicitCancel}, nil
			}
			fmt.Fprint(w, "y, n or c: ")
		}
	}
}

// askForm asks for each property of a flat form schema, required ones
// first; an empty answer leaves a property out, so its default applies.
func askForm(ctx context.Context, w io.Writer, lines <-chan string, schema map[string]any) (map[string]any, error) {
	props, _ := schema["properties"].(map[string]any)
	var required []string
	if rs, ok := schema["required"].([]any); ok {
		for _, r := range rs {
			if s, ok := r.(string); ok {
				required = append(required, s)
			}
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		ra, rb := slices.Contains(required, a), slices.Contains(required, b)
		switch {
		case ra && !rb:
			return -1
		case rb && !ra:
			return 1
		}
		return strings.Compare(a, b)
	})
	content := map[string]any{}
	for _, name := range names {
		p, _ := props[name].(map[string]any)
		must := slices.Contains(required, name)
		fmt.Fprint(w, fieldPrompt(name, p, must))
		for {
			ans, err := readLine(ctx, lines)
			if err != nil {
				return nil, err
			}
			if ans == "" && !must {
				break
			}
			v, err := fieldValue(p, ans)
			if ans == "" {
				err = errRequired
			}
			if err == nil {
				content[name] = v
				break
			}
			fmt.Fprintf(w, "%v; %s", err, fieldPrompt(name, p, must))
		}
	}
	return content, nil
}

func fieldPrompt(name string, p map[string]any, required bool) string {
	label := name
	if t, _ := p["title"].(string); t != "" {
		label = t
	}
	var hints []string
	if typ, _ := p["type"].(string); typ != "" {
		hints = append(hints, typ)
	}
	if e, ok := p["enum"].([]any); ok {
		hints = append(hints, fmt.Sprintf("one of %v", e))
	}
	if required {
		hints = append(hints, "required")
	} else if d, ok := p["default"]; ok {
		hints = append(hints, fmt.Sprintf("default %v", d))
	}
	if d, _ := p["description"].(string); d != "" {
		label += " — " + d
	}
	return fmt.Sprintf("  %s (%s): ", label, strings.Join(hints, ", "))
}

var errRequired = errors.New("an answer is required")

// fieldValue reads an answer as the property's type says.
func fieldValue(p map[string]any, ans string) (any, error) {
	switch typ, _ := p["type"].(string); typ {
	case "integer":
		n, err := strconv.ParseInt(ans, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", ans)
		}
		return n, nil
	case "number":
		f, err := strconv.ParseFloat(ans, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", ans)
		}
		return f, nil
	case "boolean":
		switch strings.ToLower(ans) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not yes or no", ans)
	case "array":
		var out []any
		for _, s := range strings.Split(ans, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out, nil
	}
	if e, ok := p["enum"].([]any); ok && !slices.Contains(e, any(ans)) {
		return nil, fmt.Errorf("%q is not one of %v", ans, e)
	}
	return ans, nil
}
