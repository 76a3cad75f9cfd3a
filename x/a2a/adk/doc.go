// Package adk is a module of its own holding caller, an agent of Google's
// Agent Development Kit (google.golang.org/adk/v2) that calls an A2A
// agent by its card's URL, which the tests of x/a2a build and run against
// lode's A2A server. It requires nothing of lode: ADK pins OpenTelemetry
// versions lode's graph cannot select, and a process of its own is the
// caller a remote agent really meets.
package adk
