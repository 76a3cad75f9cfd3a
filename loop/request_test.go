package loop_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
)

// TestStepRequest: Request resolves the Step's options, then the call's,
// on the given state, and appends nothing; a failing or panicking option
// is an *OptionError naming it, and a nil state a *LedgerError.
func TestStepRequest(t *testing.T) {
	byRole := provider.OptionFunc(func(_ context.Context, st ledger.State, r *provider.Request) error {
		role, _ := st.Metadata("role")
		r.Tools = append(r.Tools, tool.Tool{Name: "for_" + role})
		return nil
	})
	extra := provider.WithTools([]tool.Tool{{Name: "extra"}})
	fails := provider.OptionFunc(func(context.Context, ledger.State, *provider.Request) error { return errors.New("no") })
	panics := provider.OptionFunc(func(context.Context, ledger.State, *provider.Request) error { panic("boom") })
	thread := func() *ledger.Thread {
		th := ledger.NewThread(ledger.WithMetadata(map[string]string{"role": "admin"}))
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: "hi"})
		return th
	}
	cases := []struct {
		name      string
		step      []provider.InvokeOption
		call      []provider.InvokeOption
		nilState  bool
		wantTools string
		wantErr   string
	}{
		{name: "step options", step: []provider.InvokeOption{byRole}, wantTools: "for_admin"},
		{name: "call options after the step's", step: []provider.InvokeOption{byRole}, call: []provider.InvokeOption{extra}, wantTools: "extra"},
		{name: "none", wantTools: ""},
		{name: "failing option", step: []provider.InvokeOption{byRole, fails}, wantErr: "loop: preparing the turn: no"},
		{name: "panicking option", call: []provider.InvokeOption{panics}, wantErr: "loop: preparing the turn: invoke option 0 panicked: boom"},
		{name: "nil state", nilState: true, wantErr: "loop: ledger: no ledger.State given"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := loop.New(loop.WithInvokeOptions(c.step...), loop.WithLogger(slog.New(slog.DiscardHandler)))
			var st ledger.State
			th := thread()
			if !c.nilState {
				st = th
			}
			req, err := s.Request(context.Background(), st, c.call...)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, x := range req.Tools {
				names = append(names, x.Name)
			}
			if got := strings.Join(names, ","); got != c.wantTools {
				t.Errorf("tools %q, want %q", got, c.wantTools)
			}
			if len(req.Turns) != 1 || len(th.Turns()) != 1 {
				t.Errorf("request has %d turns and the thread %d, want 1 and 1", len(req.Turns), len(th.Turns()))
			}
		})
	}
}
