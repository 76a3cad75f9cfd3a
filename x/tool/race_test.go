//go:build race

package tool_test

const raceEnabled = true
