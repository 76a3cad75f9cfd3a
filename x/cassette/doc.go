// Package cassette records an HTTP session with a model server or a remote
// MCP server once, and replays it in tests ever after: same requests, same
// answers, byte for byte, with no network, no key and no cost.
//
// A cassette is a go-vcr file (gopkg.in/dnaeon/go-vcr.v4, YAML, format
// version 2): one interaction per request, each with its request and its
// response. A Recorder is the http.RoundTripper of the client a provider
// or MCP client is given:
//
//	client := cassette.ForTest(t, "testdata/weather.yaml")
//	prov, err := openai.New(openai.WithModel("gpt-4o-mini"), openai.WithHTTPClient(client))
//
// ForTest replays by default and records when LODE_RECORD=1; New and Stop
// do the same outside tests (lode run --record FILE and --replay FILE).
//
// What this package decides:
//
//   - Secrets never reach the file, by name or by value. Where they
//     stand, the values of DefaultScrubHeaders (Authorization, Api-Key,
//     X-Api-Key, X-Goog-Api-Key, cookies, ...), of headers named with
//     WithScrubHeaders or named like a credential (X-Auth-Token,
//     Private-Token), of query parameters and form fields named like one
//     (key, api_key, access_token, token, auth, secret, password, sig,
//     signature, anything ending _key, _token, _secret ..., any case),
//     a URL's password, and the JSON fields of WithScrubFields become
//     Redacted. Each such value is also a secret the Recorder learns
//     (an Authorization header gives its credentials, a Basic one its
//     decoded password too; JSON fields named like a credential, such as
//     an OAuth token response's access_token, count as well), beside the
//     values of WithSecrets and AddSecrets; every known secret is
//     replaced by Redacted wherever it appears — URLs, forms, headers,
//     request and response bodies of every interaction — raw, URL-escaped
//     or inside a JSON string however escaped ("\/", "\u003c",
//     "\u00fc"), and cut across a stream's events: the strings at one
//     JSON path in successive events (a model's text deltas, on every
//     wire lode speaks) are joined as a client joins them, and a secret
//     found across pieces leaves Redacted in its first piece and nothing
//     of itself in the others. The file is scrubbed as it is written, at Stop, so a
//     secret first seen in the fifth interaction leaves none of the
//     first four. A learned value shorter than MinLearnedSecret bytes is
//     redacted only where it stood, since replacing a short value
//     everywhere would wreck the file; a value given with WithSecrets or
//     AddSecrets is replaced everywhere whatever its length.
//   - Replay matches a request by method, URL (query in any order) and
//     body, scrubbed as the recording was (so ?key=... matches the
//     recorded ?key=REDACTED, whatever the key): JSON compared after
//     scrubbing and canonicalising (key order, whitespace), anything
//     else byte for byte. Headers are not compared. Where a recorded
//     JSON string holds Redacted and the request's does not compare
//     equal, each Redacted stands for any non-empty text, so a body that
//     carried a secret the recording learned only from a later request,
//     or a key that changed since, still matches.
//     Interactions are written in the order their requests were made, and
//     each answers once, so a session that asks the same thing twice gets
//     both answers in turn.
//   - A request the cassette holds no answer for fails the request with a
//     *MissError (ErrNoInteraction) naming the closest recorded
//     interaction and the first difference, as a JSON path with both
//     values, and never a secret; Detail gives the message without its
//     advice to record again with LODE_RECORD=1, for lode run, which
//     says lode run --record FILE instead. A missing file is ErrNotFound; a file that is not a
//     cassette, or one whose interactions lack a method, an absolute URL
//     or a status, is ErrCorrupt; both errors name the file.
//   - Event streams (text/event-stream) replay one event per read, as the
//     server sent them, so the loop's deltas and observers see what they
//     saw live. With WithTiming, recording notes when each event arrived
//     (in a response header of lode's own, Lode-Cassette-Event-Ms) and
//     replay keeps that pace; without it a cassette holds no times.
//   - Clock is the time as the recorded server saw it: replaying, the Date
//     of the newest response served, so that what a client judges by the
//     server's times (anthropic's WithClock: a code execution container's
//     expiry) comes out as it did when recorded.
//   - While recording, the client reads each response as it arrives, so a
//     recorded stream still streams; the interaction is complete, and the
//     body ends, when the server ends the response. A response the client
//     gives up on first (it ends the request's context, as an MCP client
//     does with a stream that stays open) is recorded as far as it went,
//     and replay holds it open after its last byte until the request's
//     context ends, as the server did.
//   - MCP over streamable HTTP records and replays like a model: JSON-RPC
//     ids are deterministic within a session, and the Mcp-Session-Id the
//     server gave is given back on replay. The standalone event stream an
//     MCP client opens with GET has no end to record: both modes answer
//     it with 405, as a server without one does, so server notifications
//     sent on it (list_changed) are not part of a cassette.
package cassette
