// Command lode is lode's command line with A2A: lode.yaml's a2a: agents
// are mounted as tools. It is built from the x/a2a module, so that the
// root module's lode never requires the A2A SDK:
//
//	go install github.com/lodeworks/lode/x/a2a/cmd/lode@latest
package main

import "github.com/lodeworks/lode/x/cli"

func main() { cli.Main(cli.WithA2ACaller(caller{})) }
