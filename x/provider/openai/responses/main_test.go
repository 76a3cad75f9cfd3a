package responses

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any leaves a goroutine behind: a
// stream reader, an idle timer, a retry wait.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
