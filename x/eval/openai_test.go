package eval_test

import "github.com/lodeworks/lode/x/provider/openai"

func openaiNoStream() openai.Option { return openai.WithStreaming(false) }
