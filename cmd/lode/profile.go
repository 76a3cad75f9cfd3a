//go:build lodeprofile

package main

import (
	"net/http"
	_ "net/http/pprof" // only in builds tagged lodeprofile: bench/load's
	"os"
	"runtime"
)

// A build tagged lodeprofile (bench/load -profile) serves the runtime's
// profiles on the loopback address in LODE_PPROF, apart from lode web's
// own listener; lode as shipped has no such endpoint.
func init() {
	addr := os.Getenv("LODE_PPROF")
	if addr == "" {
		return
	}
	runtime.SetBlockProfileRate(int(1e5)) // one sample per 100 µs blocked
	runtime.SetMutexProfileFraction(10)
	go http.ListenAndServe(addr, nil)
}
