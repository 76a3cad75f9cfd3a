//go:build !linux

package file

import (
	"errors"
	"os"
)

func syncAll(*os.File) error { return errors.New("no shared flush on this system") }

const canSyncAll = false
