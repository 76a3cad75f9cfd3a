package postgres_test

import (
	"testing"

	"github.com/lodeworks/lode/x/memory/internal/memorytest"
)

// BenchmarkSearch100k times a search of 100,000 facts in one scope, and
// reports recall on the generated questions.
func BenchmarkSearch100k(b *testing.B) { memorytest.Bench(b, open, 100_000, 1) }

// BenchmarkSearch100kUsers times a search of one user's 1,000 facts in a
// store of 100,000 facts of 100 users.
func BenchmarkSearch100kUsers(b *testing.B) { memorytest.Bench(b, open, 100_000, 100) }
