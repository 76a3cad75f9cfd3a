package cli_test

import (
	"context"
	"fmt"
	"os"

	"github.com/lodeworks/lode/x/cli"
)

// Run is the command without the process around it: a program that wraps
// lode (or a test) passes the arguments and streams, and reads the exit
// code. A mistake in the command line is one line on standard error and
// exit code 2.
func ExampleRun() {
	code := cli.Run(context.Background(), []string{"frobnicate"}, cli.WithIO(nil, os.Stdout, os.Stdout))
	fmt.Println("exit code", code)
	// Output:
	// lode: unknown command "frobnicate" (lode help lists the commands)
	// exit code 2
}
