package sqlite_test

import (
	"testing"

	"github.com/lodeworks/lode/x/memory/internal/memorytest"
)

// BenchmarkSearch100k times a search of 100,000 facts in one scope, and
// reports recall on the generated questions.
func BenchmarkSearch100k(b *testing.B) { memorytest.Bench(b, open, 100_000) }
