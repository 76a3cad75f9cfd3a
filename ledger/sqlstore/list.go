package sqlstore

import (
	"context"
	"fmt"
	"iter"

	"github.com/lodeworks/lode/ledger"
)

// List yields every thread in ID order (byte order, as the file store),
// reading a page of threads and their metadata per query; no connection is
// held while the caller's loop body runs.
//
// For each thread it also checks that the turn rows are the ones the
// thread records: as many, numbered from 0 with no gap. A thread whose
// rows disagree (a row lost or added behind the store's back), which Load
// would refuse, is yielded with its ID and an error matching
// ledger.ErrCorrupt, and listing goes on. The check counts index entries,
// O(turns) per thread; turns are not decoded, so a row whose turn does not
// decode is reported by Load alone.
func (s *Store) List(ctx context.Context) iter.Seq2[ledger.ThreadInfo, error] {
	return func(yield func(ledger.ThreadInfo, error) bool) {
		after := ""
		for {
			if err := s.check("list", ctx); err != nil {
				yield(ledger.ThreadInfo{}, err)
				return
			}
			page, err := s.page(ctx, after)
			if err != nil {
				yield(ledger.ThreadInfo{}, fmt.Errorf("sqlstore: list: %w", err))
				return
			}
			for _, l := range page {
				if !yield(l.info, l.err) {
					return
				}
			}
			if len(page) < s.pageSize {
				return
			}
			after = page[len(page)-1].info.ID
		}
	}
}

// listed is one thread of a List page, with what is wrong with it.
type listed struct {
	info    ledger.ThreadInfo
	baseLen int64 // the turns it shares with its base
	err     error
}

// turnRows summarises a thread's turn rows.
type turnRows struct{ count, min, max int64 }

func (s *Store) page(ctx context.Context, after string) ([]listed, error) {
	var page []listed
	err := s.read(ctx, func(q querier) error {
		page = page[:0]
		rows, err := q.QueryContext(ctx, s.q.listThreads, after, s.pageSize)
		if err != nil {
			return err
		}
		defer rows.Close()
		at := map[string]int{}
		for rows.Next() {
			var info ledger.ThreadInfo
			var l listed
			var created, updated int64
			if err := rows.Scan(&info.ID, &info.Turns, &created, &updated, &l.baseLen); err != nil {
				return err
			}
			info.Created, info.Updated = fromNanos(created), fromNanos(updated)
			info.Metadata = map[string]string{}
			l.info = info
			at[info.ID] = len(page)
			page = append(page, l)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		first, last := page[0].info.ID, page[len(page)-1].info.ID
		mrows, err := q.QueryContext(ctx, s.q.listMeta, first, last)
		if err != nil {
			return err
		}
		defer mrows.Close()
		for mrows.Next() {
			var id, k, v string
			if err := mrows.Scan(&id, &k, &v); err != nil {
				return err
			}
			if i, ok := at[id]; ok {
				page[i].info.Metadata[k] = v
			}
		}
		if err := mrows.Err(); err != nil {
			return err
		}
		trows, err := q.QueryContext(ctx, s.q.listTurnRows, first, last)
		if err != nil {
			return err
		}
		defer trows.Close()
		found := make(map[string]turnRows, len(page))
		for trows.Next() {
			var id string
			var r turnRows
			if err := trows.Scan(&id, &r.count, &r.min, &r.max); err != nil {
				return err
			}
			found[id] = r
		}
		if err := trows.Err(); err != nil {
			return err
		}
		for i := range page {
			info := page[i].info
			if msg := checkTurnRows(page[i].baseLen, int64(info.Turns), found[info.ID]); msg != "" {
				page[i].err = fmt.Errorf("sqlstore: list %s: %s: %w", info.ID, msg, ledger.ErrCorrupt)
			}
		}
		return nil
	})
	return page, err
}

// checkTurnRows says what is wrong when a thread that records turns turns,
// the first from of them its base's, does not have exactly the rows from
// to turns-1; "" when nothing is.
func checkTurnRows(from, turns int64, r turnRows) string {
	own := turns - from
	if r.count == own && (own == 0 || r.min == from && r.max == turns-1) {
		return ""
	}
	shared := ""
	if from > 0 {
		shared = fmt.Sprintf(" (%d of them its base's)", from)
	}
	if r.count == 0 {
		return fmt.Sprintf("the thread records %d turns%s but no turn rows are stored", turns, shared)
	}
	return fmt.Sprintf("the thread records %d turns%s but %d turn rows are stored, numbered %d to %d", turns, shared, r.count, r.min, r.max)
}
