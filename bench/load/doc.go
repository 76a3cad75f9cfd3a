// Command load serves many people at once and measures it: a fake
// OpenAI-compatible model on loopback streams every answer at a set rate
// of chunks, each stamped with the time it left the model; N concurrent
// conversations speak the AI SDK's UI message stream protocol to the
// server under test (each: send, read the stream to its end, think, send
// again, every second message making the model call a tool first); and
// the server runs as a process of its own: lode web (built from ./cmd/lode)
// on the file store, SQLite and PostgreSQL, and beside it the AI SDK's own
// Node server (node/server.mjs: streamText with toUIMessageStreamResponse,
// the same tool), all pointed at the same fake model, in interleaved
// rounds, a new server process per measurement.
//
//	scripts/setup-load.sh                    # Node.js 22 and the AI SDK, pinned
//	go run ./bench/load -n 10,100,1000       # every server, 3 rounds
//	go run ./bench/load -n 100 -servers postgres,aisdk -rounds 5 -v
//	go run ./bench/load -n 1000 -servers file -rounds 1 -pprof 127.0.0.1:6061
//
// With -pprof, lode is built with the tag lodeprofile, which serves
// net/http/pprof (block and mutex profiles on) on that address while it
// runs: go tool pprof http://127.0.0.1:6061/debug/pprof/profile. lode as
// built without the tag has no such endpoint.
//
// It prints, per N and server, the medians over rounds of: the latency a
// server adds to a chunk (from leaving the model to its bytes reaching the
// client: p50, p99, max), the time from a message sent to its stream's
// first part and to its first text (the model's own time included: one
// chunk interval, two when it calls the tool first), chunks delivered per second and per CPU-second of the
// server, CPU per streamed token (a chunk is one token; with PostgreSQL
// the database's CPU is given beside), the server's resident memory at
// rest, per stream open at the peak and per conversation once all ended,
// and the errors (a failed request, a stream that ends early or loses a
// chunk). PostgreSQL is a throwaway cluster (internal/pgtest), durable
// unless -pg-fsync=false.
package main
