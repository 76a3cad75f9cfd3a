package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/memory"
	"github.com/lodeworks/lode/x/provider/fallback"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// printer shows a run as it happens: the answer streamed to out, each tool
// call and its result to info.
type printer struct {
	mu      sync.Mutex
	out     io.Writer
	info    io.Writer
	midLine bool
	// thinking and streamed hold for the answer being streamed: whether
	// "(thinking…)" was shown, and whether its text came in deltas.
	thinking, streamed bool
	// run is what the run so far has spent; perTurn (--trace) prints each
	// turn's usage as it completes.
	run     spent
	perTurn bool
	// held are notes (an MCP server's logs and progress) that came while
	// the answer's line was open: written then, they would cut the answer
	// on stdout with a newline it does not have, so they wait for the line
	// to end.
	held []string
	// answer is the text of the answer being written, for the turn that
	// is stopped before it lands (loop.KeepStopped).
	answer strings.Builder
	// prompt is the chat's prompt while it waits for a line at it: a note
	// written then goes on a line of its own and the prompt is shown again
	// below it, so the person types after a prompt.
	prompt string
}

// note writes line to info, now or once the answer's line has ended.
func (p *printer) note(line string) {
	switch {
	case p.midLine:
		p.held = append(p.held, line)
	case p.prompt != "":
		fmt.Fprintf(p.info, "\n%s\n%s", line, p.prompt)
	default:
		fmt.Fprintln(p.info, line)
	}
}

// partial is the text shown of an answer that has not landed, and
// forgets it.
func (p *printer) partial() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.answer.String()
	p.answer.Reset()
	return s
}

// flushHeld writes the notes held while the answer's line was open.
func (p *printer) flushHeld() {
	for _, l := range p.held {
		fmt.Fprintln(p.info, l)
	}
	p.held = nil
}

// prompting shows the chat's prompt and records that it waits at it; ""
// records that the line was read.
func (p *printer) prompting(prompt string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prompt = prompt
	if prompt != "" {
		fmt.Fprint(p.info, prompt)
	}
}

func (p *printer) Emit(_ context.Context, ev loop.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev := ev.(type) {
	case mcp.Notification:
		p.note(notificationLine(ev))
	case fallback.AttemptEvent:
		if line, ok := attemptLine(ev); ok {
			p.breakLine()
			fmt.Fprintln(p.info, line)
		}
	case memory.ExtractEvent:
		p.breakLine()
		fmt.Fprintln(p.info, extractLine(ev))
	case loop.UsageEvent:
		p.run.count(ev.Usage)
		if p.perTurn {
			one := spent{turns: 1}
			one.count(ev.Usage)
			p.breakLine()
			fmt.Fprintln(p.info, one.line("("+ev.For)+")")
		}
	case loop.DeltaEvent:
		switch d := ev.Delta.(type) {
		case artifact.TextDelta:
			if d.Content != "" {
				p.streamed = true
				p.answer.WriteString(d.Content)
				p.write(d.Content)
			}
		case artifact.ReasoningDelta:
			// A model that thinks may be silent for a while; say so once
			// per answer, without printing the thoughts.
			if !p.thinking {
				p.thinking = true
				p.breakLine()
				fmt.Fprintln(p.info, "(thinking…)")
			}
		}
	case loop.TurnCompleteEvent:
		p.answer.Reset()
		answer := ev.Role == ledger.RoleAssistant
		for _, a := range ev.Artifacts {
			switch a := a.(type) {
			case artifact.Text:
				// A server that does not stream sends the text whole.
				if answer && !p.streamed && a.Content != "" {
					p.write(a.Content)
				}
			case artifact.ToolCall:
				p.breakLine()
				fmt.Fprintf(p.info, "→ %s %s\n", a.Name, clip(a.Arguments, 200))
			case artifact.ToolResult:
				p.breakLine()
				mark := "←"
				if a.IsError {
					mark = "✗"
				}
				fmt.Fprintf(p.info, "%s %s: %s\n", mark, a.Name, clip(a.Content, 300))
			}
		}
		if answer {
			p.thinking, p.streamed = false, false
			p.usage(ev.Artifacts)
		}
	}
}

// usage adds an answer's usage to the run's, printing it with --trace.
func (p *printer) usage(arts []artifact.Artifact) {
	for _, a := range arts {
		u, ok := a.(artifact.Usage)
		if !ok {
			continue
		}
		p.run.add(u)
		if p.perTurn {
			one := spent{}
			one.add(u)
			p.breakLine()
			fmt.Fprintln(p.info, one.line(fmt.Sprintf("(turn %d", p.run.turns))+")")
		}
	}
}

// summary prints what the run spent, once, and starts the next run's
// count.
func (p *printer) summary() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.run.line("(used"); l != "" {
		fmt.Fprintln(p.info, l+")")
	}
	p.run = spent{}
}

func (p *printer) write(s string) {
	fmt.Fprint(p.out, s)
	p.midLine = !strings.HasSuffix(s, "\n")
	if !p.midLine {
		p.flushHeld()
	}
}

func (p *printer) breakLine() {
	if p.midLine {
		fmt.Fprintln(p.out)
		p.midLine = false
	}
	p.flushHeld()
}

// endLine ends a run's output, however the run ended.
func (p *printer) endLine() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.breakLine()
	p.thinking, p.streamed = false, false
}

// clip shows s on one line, at most n bytes of it.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes)", len(s))
}
