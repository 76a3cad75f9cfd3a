// Package recordings gives the provider adapters' tests the public
// recordings they replay: a Go module fetched at test time, at a pinned
// version, into the module cache (nothing of it is committed), and the
// go-vcr cassettes in it.
//
// Dir skips the calling test when LODE_TEST_REPLAY=off, and when the
// module cannot be fetched outside CI; in CI (CI set), which can reach the
// module proxy, a failed fetch fails the test.
package recordings
