package file

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/lodeworks/lode/ledger"
)

// counterDir holds the counters, one file each, apart from the journals.
const counterDir = "counters"

// counterWidth is the fixed size of a counter file: a signed decimal
// padded to one write, so that a counter is never read half written.
const counterWidth = 21

// AddCounter adds delta to the counter name under limit (ledger.Counter).
// Each counter is a small file under counters/, changed under its
// exclusive advisory lock, so concurrent adds from every process sharing
// the directory are applied one after another; the kernel drops the lock
// of a process that dies.
func (s *Store) AddCounter(ctx context.Context, name string, delta, limit int64) (total int64, ok bool, err error) {
	if err := s.check("add counter"); err != nil {
		return 0, false, err
	}
	if err := ctx.Err(); err != nil {
		return 0, false, fmt.Errorf("file: add counter: %w", err)
	}
	if err := ledger.CheckCounterName(name); err != nil {
		return 0, false, fmt.Errorf("file: add counter %q: %w", name, err)
	}
	fail := func(err error) (int64, bool, error) {
		return 0, false, fmt.Errorf("file: add counter %q: %w", name, err)
	}
	if err := s.root.Mkdir(counterDir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fail(err)
	}
	f, err := s.root.OpenFile(counterDir+string(os.PathSeparator)+counterFile(name), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	if err := lock(f, true); err != nil {
		return fail(err)
	}
	defer unlock(f)
	buf := make([]byte, counterWidth+1)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fail(err)
	}
	if text := strings.TrimSpace(string(buf[:n])); text != "" {
		if total, err = strconv.ParseInt(text, 10, 64); err != nil {
			return fail(fmt.Errorf("%w: the counter file holds %q", ledger.ErrCorrupt, text))
		}
	}
	if limit >= 0 && total+delta > limit {
		return total, false, nil
	}
	total += delta
	line := fmt.Sprintf("%*d\n", counterWidth, total)
	if _, err := f.WriteAt([]byte(line), 0); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	return total, true, nil
}

var _ ledger.Counter = (*Store)(nil)

// counterFile names a counter's file by a hash of its name, as a name may
// be longer than a file name can be, or hold a separator.
func counterFile(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}
