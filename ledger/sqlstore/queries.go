package sqlstore

import (
	"strconv"
	"strings"
)

// queries holds the statements in the dialect's placeholder style.
type queries struct {
	insertThread, insertTurn, upsertMeta  string
	bump, threadVersion, loadMeta         string
	threadHead, threadBase                string
	loadOwnTurns, loadTurnRange           string
	forksOf, copyTurns, rebase            string
	deleteThread, deleteTurns, deleteMeta string
	listThreads, listMeta, listTurnRows   string
}

func newQueries(d Dialect) queries {
	p := func(q string) string { return placeholders(d, q) }
	return queries{
		insertThread:  p(`INSERT INTO lode_threads (id, incarnation, version, turns, created_at, updated_at, base_id, base_len) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`),
		insertTurn:    p(`INSERT INTO lode_turns (thread_id, seq, role, turn) VALUES (?, ?, ?, ?)`),
		upsertMeta:    p(`INSERT INTO lode_metadata (thread_id, name, value) VALUES (?, ?, ?) ON CONFLICT (thread_id, name) DO UPDATE SET value = excluded.value`),
		bump:          p(`UPDATE lode_threads SET version = version + 1, turns = turns + ?, updated_at = ? WHERE id = ? AND incarnation = ? AND version = ?`),
		threadVersion: p(`SELECT incarnation, version FROM lode_threads WHERE id = ?`),
		threadHead:    p(`SELECT incarnation, version, turns, base_id, base_len FROM lode_threads WHERE id = ?`),
		threadBase:    p(`SELECT base_id, base_len FROM lode_threads WHERE id = ?`),
		loadOwnTurns:  p(`SELECT seq, turn FROM lode_turns WHERE thread_id = ? AND seq >= ? ORDER BY seq`),
		loadTurnRange: p(`SELECT seq, turn FROM lode_turns WHERE thread_id = ? AND seq >= ? AND seq < ? ORDER BY seq`),
		forksOf:       p(`SELECT id, base_len FROM lode_threads WHERE base_id = ?`),
		copyTurns:     p(`INSERT INTO lode_turns (thread_id, seq, role, turn) SELECT ?, seq, role, turn FROM lode_turns WHERE thread_id = ? AND seq >= ? AND seq < ?`),
		rebase:        p(`UPDATE lode_threads SET base_id = ?, base_len = ? WHERE id = ?`),
		loadMeta:      p(`SELECT name, value FROM lode_metadata WHERE thread_id = ?`),
		deleteThread:  p(`DELETE FROM lode_threads WHERE id = ?`),
		deleteTurns:   p(`DELETE FROM lode_turns WHERE thread_id = ?`),
		deleteMeta:    p(`DELETE FROM lode_metadata WHERE thread_id = ?`),
		listThreads:   p(`SELECT id, turns, created_at, updated_at, base_len FROM lode_threads WHERE id > ? ORDER BY id LIMIT ?`),
		listMeta:      p(`SELECT thread_id, name, value FROM lode_metadata WHERE thread_id >= ? AND thread_id <= ?`),
		listTurnRows:  p(`SELECT thread_id, COUNT(*), MIN(seq), MAX(seq) FROM lode_turns WHERE thread_id >= ? AND thread_id <= ? GROUP BY thread_id`),
	}
}

// placeholders rewrites ? to $1, $2, ... for PostgreSQL. The statements
// here hold no string literals, so every ? is a parameter.
func placeholders(d Dialect, q string) string {
	if d != Postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}
