package a2a

import (
	_ "github.com/a2aproject/a2a-go/v2/a2a"
	_ "github.com/lodeworks/lode/loop"
)
