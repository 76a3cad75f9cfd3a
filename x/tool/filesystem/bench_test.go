package filesystem_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/filesystem"
)

// BenchmarkRead1MB reads a 1 MB text file through the read tool (the
// registry's Binding.Call: argument parsing, schema validation, the
// confined open and read) and, for reference, with os.ReadFile.
func BenchmarkRead1MB(b *testing.B) {
	dir := b.TempDir()
	line := strings.Repeat("lorem ipsum dolor sit amet ", 3) + "\n" // 82 bytes
	content := strings.Repeat(line, 1_000_000/len(line)+1)[:1_000_000]
	path := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("tool", func(b *testing.B) {
		fsys, err := filesystem.New(dir)
		if err != nil {
			b.Fatal(err)
		}
		defer fsys.Close()
		reg := tool.NewRegistry()
		if err := reg.Mount(context.Background(), fsys); err != nil {
			b.Fatal(err)
		}
		bind, _ := reg.Lookup("filesystem__read")
		ctx, sb := context.Background(), tool.NoSandbox()
		b.SetBytes(int64(len(content)))
		b.ReportAllocs()
		for b.Loop() {
			out, err := bind.Call(ctx, sb, `{"path":"big.txt"}`)
			if err != nil {
				b.Fatal(err)
			}
			if res := out.(*tool.Result); res.IsError || len(res.Content) != len(content) {
				b.Fatalf("read: %v %d bytes", res.IsError, len(res.Content))
			}
		}
	})
	b.Run("os.ReadFile", func(b *testing.B) {
		b.SetBytes(int64(len(content)))
		b.ReportAllocs()
		for b.Loop() {
			data, err := os.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			if len(data) != len(content) {
				b.Fatal("short read")
			}
		}
	})
}
