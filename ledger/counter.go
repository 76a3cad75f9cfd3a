package ledger

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"
)

// Counter is a Store that keeps named counters which every process using
// the store sees: for limits that must hold across processes and replicas,
// such as what a tenant may spend in a day. lode's file, SQLite and
// PostgreSQL stores are Counters.
type Counter interface {
	// AddCounter adds delta to the counter name (which starts at 0, and
	// is UTF-8 text without NUL, at most 512 bytes: CheckCounterName) when
	// the total after stays at or under limit, atomically with every other
	// AddCounter of the store, and returns the total after. When the total
	// would pass limit nothing is added, and ok is false with the total as
	// it stands. A negative limit adds unconditionally (to give back what
	// was reserved).
	AddCounter(ctx context.Context, name string, delta, limit int64) (total int64, ok bool, err error)
}

// NoLimit is the limit that makes AddCounter add unconditionally.
const NoLimit int64 = -1

// ErrCounterName is what AddCounter returns, wrapped, for a name it cannot
// keep.
var ErrCounterName = errors.New("ledger: a counter name is 1 to 512 bytes of UTF-8 without NUL")

// CheckCounterName reports whether a store can keep a counter named name.
func CheckCounterName(name string) error {
	if name == "" || len(name) > 512 || !utf8.ValidString(name) || strings.IndexByte(name, 0) >= 0 {
		return ErrCounterName
	}
	return nil
}
