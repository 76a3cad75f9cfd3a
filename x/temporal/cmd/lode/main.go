// Command lode is the lode command with Temporal: every command of the
// root module's lode, and --temporal HOST:PORT on lode worker, lode run
// and lode resume, which run lode.yaml's agent as a Temporal workflow
// (package x/temporal) so that any worker, on any machine, continues any
// run. It lives in x/temporal's module because the root module never
// requires the Temporal SDK:
//
//	go install github.com/lodeworks/lode/x/temporal/cmd/lode@latest
//
//	lode worker --temporal 127.0.0.1:7233 --store /shared/threads
//	lode run --temporal 127.0.0.1:7233 --store /shared/threads "prompt"
//	lode resume --temporal 127.0.0.1:7233 --store /shared/threads THREAD approve:ID
//
// Every worker and every lode run shares the store, which stays the
// record of each thread; Temporal keeps only what the workflow needs.
package main

import "github.com/lodeworks/lode/x/cli"

func main() { cli.Main(cli.WithTemporal(engine{})) }
