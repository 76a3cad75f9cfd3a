// Package errstyle holds the test that keeps the module's error messages
// in one style: every exported error variable's message starts with its
// package's import name and ": " (loop:, xtool:, ledger:), once, and goes
// on in lower case. The test parses the module's sources, so packages
// added later are checked without being listed; nested modules are not
// part of it.
package errstyle
