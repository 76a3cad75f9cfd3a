// Command lode is the lode command with A2A: every command of the root
// module's lode, plus lode serve --a2a ADDR, which serves lode.yaml's agent
// (model, tools, policy, approvals, guards) to any Agent2Agent client, and
// lode.yaml's a2a: agents mounted as tools (package x/a2a). It lives in
// x/a2a's module because the root module never requires the A2A SDK:
//
//	go install github.com/lodeworks/lode/x/a2a/cmd/lode@latest
//
//	lode serve --a2a 127.0.0.1:7490 --store .lode/threads
package main

import "github.com/lodeworks/lode/x/cli"

func main() { cli.Main(cli.WithA2AServer(a2aServer{}), cli.WithA2ACaller(caller{})) }
