package main

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSmoke runs the whole harness small: two conversations of two
// messages (one calling the tool) on lode web with each store and on the
// AI SDK's server. Every stamped chunk reaches the client, nothing fails,
// and the table has a row per server. PostgreSQL is left out only when
// LODE_TEST_POSTGRES=off, the AI SDK server only when LODE_TEST_AISDK=off;
// a missing Node.js is a failure that names scripts/setup-load.sh.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lode and starts servers")
	}
	servers := []string{serverFile, serverSQLite}
	if os.Getenv("LODE_TEST_POSTGRES") != "off" {
		servers = append(servers, serverPostgres)
	}
	if os.Getenv("LODE_TEST_AISDK") != "off" {
		servers = append(servers, serverAISDK)
	}
	c := config{ns: []int{2}, servers: servers, rounds: 1, turns: 2, chunks: 4, rate: 200, think: 10 * time.Millisecond, ramp: 10 * time.Millisecond, pgFsync: false}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	results, err := run(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(servers) {
		t.Fatalf("%d results for %d servers", len(results), len(servers))
	}
	for _, r := range results {
		if len(r.errs) > 0 {
			t.Errorf("%s: errors %v", r.server, r.errs)
		}
		if want := int64(2 * 2 * 4); r.chunks != want || len(r.latency) != int(want) || len(r.firstText) != 4 || len(r.firstByte) != 4 {
			t.Errorf("%s: %d chunks, %d latencies, %d first texts; want %d, %d, 4", r.server, r.chunks, len(r.latency), len(r.firstText), want, want)
		}
		if r.latency[0] < 0 || r.cpu <= 0 && r.chunks > 1000 || r.baseRSS <= 0 {
			t.Errorf("%s: latency %d ns, CPU %s, RSS %d", r.server, r.latency[0], r.cpu, r.baseRSS)
		}
	}
	var out bytes.Buffer
	printTable(&out, c, results)
	for _, s := range servers {
		if !strings.Contains(out.String(), "| 2 | "+label(s)+" |") {
			t.Errorf("no row for %s in\n%s", s, out.String())
		}
	}
}

// TestStamps checks what the client reads from a text delta: every whole
// stamp, nothing from a broken or empty one.
func TestStamps(t *testing.T) {
	for _, tc := range []struct {
		delta string
		want  []int64 // now (100) minus each stamp
	}{
		{" ~10~", []int64{90}},
		{" ~10~ ~20~", []int64{90, 80}},
		{"plain text", nil},
		{" ~~", nil},
		{" ~12", nil},
		{" ~1x~", nil},
		{"~~5~", []int64{95}},
	} {
		got := appendStamps(nil, tc.delta, 100)
		if !slices.Equal(got, tc.want) {
			t.Errorf("appendStamps(%q) = %v, want %v", tc.delta, got, tc.want)
		}
	}
}
