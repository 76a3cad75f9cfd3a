package cassette_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no recording or replay leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
