package loop

import (
	"context"
	"errors"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
)

// Request returns what a turn on st would send the provider, without
// calling it: st's history with the Step's invoke options, then opts,
// resolved with (ctx, st), as Turn resolves them. Its Tools are the tools
// that turn would offer, after every filter, so a page can show a caller
// what it may use before the first message. An option that fails or
// panics is an *OptionError, as in Turn; nothing is appended to st. No
// Admitter is asked and no cost limit reserves anything: nothing is sent.
func (s *Step) Request(ctx context.Context, st ledger.State, opts ...provider.InvokeOption) (*provider.Request, error) {
	if st == nil {
		return nil, &LedgerError{Err: errors.New("no ledger.State given")}
	}
	turns, err := s.repair(ctx, st)
	if err != nil {
		return nil, err
	}
	if _, ok := st.Metadata(TrippedKey); ok {
		turns = withoutTripped(turns)
	}
	req := &provider.Request{Turns: turns}
	if err := s.resolve(ctx, st, req, opts); err != nil {
		return nil, err
	}
	return req, nil
}
