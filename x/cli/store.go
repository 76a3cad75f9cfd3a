package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/lodeworks/lode/ledger"
	xstore "github.com/lodeworks/lode/x/store"
)

// storeForms is how a command's help names what --store takes.
const storeForms = "a folder, sqlite:PATH or postgres://USER@HOST/DB"

// openStore opens the ledger spec names (x/store): what --store and
// store: in lode.yaml say.
func openStore(ctx context.Context, spec string) (xstore.Store, error) {
	return xstore.Open(ctx, spec)
}

// checkStore refuses a store spec that cannot be opened (a password in a
// PostgreSQL URL, an unknown kind) before anything runs: flag's, else
// store: in cfg, whose error names its line.
func checkStore(flag string, cfg *Config) error {
	if flag != "" {
		_, err := xstore.Parse(flag)
		if err != nil {
			return usageError{err.Error()}
		}
		return nil
	}
	if cfg.Store != "" {
		if _, err := xstore.Parse(cfg.Store); err != nil {
			return fmt.Errorf("%s: %w", cfg.file.at("store"), err)
		}
	}
	return nil
}

// storeAbsent says whether spec names a folder or SQLite file that does
// not exist, and what it is, so that a command that only reads creates
// nothing. A PostgreSQL database is never absent here: Open says when it
// cannot be reached.
func storeAbsent(spec string) (what string, absent bool, err error) {
	sp, err := xstore.Parse(spec)
	if err != nil {
		return "", false, err
	}
	what = "the folder"
	switch sp.Kind {
	case xstore.Postgres:
		return "", false, nil
	case xstore.SQLite:
		what = "the file"
	}
	if _, err := os.Stat(sp.Path); errors.Is(err, os.ErrNotExist) {
		return what, true, nil
	}
	return what, false, nil
}

// storeName is spec as it is printed for pasting back into --store.
func storeName(spec string) string {
	if sp, err := xstore.Parse(spec); err == nil {
		return sp.String()
	}
	return spec
}

// spendCounter counts the policy's usd_per_day spending in the store the
// door's threads are kept in, opened on its first use and kept until
// close.
type spendCounter struct {
	spec   string
	mu     sync.Mutex
	s      xstore.Store
	closed bool
}

// AddCounter opens the store (until it opens once), then counts in it.
func (c *spendCounter) AddCounter(ctx context.Context, name string, delta, limit int64) (int64, bool, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return 0, false, ledger.ErrClosed
	}
	if c.s == nil {
		s, err := openStore(ctx, c.spec)
		if err != nil {
			c.mu.Unlock()
			return 0, false, fmt.Errorf("counting spending: %w", err)
		}
		c.s = s
	}
	s := c.s
	c.mu.Unlock()
	return s.AddCounter(ctx, name, delta, limit)
}

// Close closes the store if it was opened.
func (c *spendCounter) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.s == nil {
		return nil
	}
	err := c.s.Close()
	c.s = nil
	return err
}
