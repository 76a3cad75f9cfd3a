// Package providertest holds what the model adapters' tests share: running
// an invocation to its end, walking decoded JSON, recording spans and
// answering requests from memory. It is imported by tests only.
package providertest
