// Package script is a deterministic provider.Provider: it plays a script of
// assistant replies, streaming each as deltas before yielding the whole
// artifacts, and records every request it was sent (the turns and the tools
// offered) so a test can assert on what the model would have seen.
//
// Tests, examples and `lode demo` use it; it needs no network and no key.
package script
