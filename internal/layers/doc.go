// Package layers holds the test that keeps lode's imports going one way:
// each package imports only packages in its own layer or below it
// (artifact, then ledger, then the stores, tool and capture, then
// provider and the model adapters, then loop, then the rest of x/, then
// the command and the examples). The
// layering is data in the test; a package that fits no layer fails it
// until it is given one. Test files may import upwards (a loop test runs a
// real tool handler); the test reads only what packages import to build.
package layers
