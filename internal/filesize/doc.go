// Package filesize holds the test that keeps lode's source files short
// enough to read as one room: no hand-written, non-test .go file in the
// repository, nested modules included, is longer than MaxLines. Generated
// files are exempt; a file may exceed the limit only while it is listed
// in the test's allowlist, which is meant to shrink to nothing.
package filesize
