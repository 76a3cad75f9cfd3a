// Package a2a speaks the Agent2Agent protocol (A2A) both ways: it serves a
// lode agent to any A2A client, and mounts a remote A2A agent's skills as
// tools. It is a module of its own so that the A2A SDK and its gRPC weight
// never enter the root module's graph.
package a2a
