// Package providertest holds what the model adapters' tests share: running
// an invocation to its end, walking decoded JSON, recording spans and
// answering requests from memory, and the histories guards leave behind
// (StoppedHistories, RunGuarded), which every adapter must send with no
// empty message and no tripwire. It is imported by tests only.
package providertest
