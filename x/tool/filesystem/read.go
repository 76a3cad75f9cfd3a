package filesystem

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"syscall"
	"unicode/utf8"
	"unsafe"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/internal/hardlink"
)

// binaryProbe is how much of a file is checked for NUL bytes, the sign of
// a binary file (as git does).
const binaryProbe = 8000

// ReadResult is the Value of a successful read.
type ReadResult struct {
	Path string `json:"path"`
	// Offset is the first line returned.
	Offset int `json:"offset"`
	// Bytes is the length of the returned text.
	Bytes int `json:"bytes"`
	// NextOffset, when not zero, is the line to continue from: the file
	// goes on beyond what was returned.
	NextOffset int `json:"next_offset,omitempty"`
}

// openRegular opens rel for reading: a regular file with a single link,
// unless hard links are allowed.
func (f *FS) openRegular(rel string) (*os.File, fs.FileInfo, *tool.Result) {
	file, info, res := f.openFile(rel)
	if res != nil {
		return nil, nil, res
	}
	if res := f.refuseLinked(rel, info); res != nil {
		file.Close()
		return nil, nil, res
	}
	return file, info, nil
}

// openFile opens rel for reading. O_NONBLOCK keeps a named pipe from
// blocking the open; anything but a regular file is then refused.
func (f *FS) openFile(rel string) (*os.File, fs.FileInfo, *tool.Result) {
	file, err := f.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, failf("%s", f.describe(rel, err))
	}
	info, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, nil, failf("%s", f.describe(rel, err))
	}
	if info.IsDir() {
		file.Close()
		return nil, nil, failf("%s is a directory; use list to see what it holds", quote(rel))
	}
	if !info.Mode().IsRegular() {
		file.Close()
		return nil, nil, failf("%s is not a regular file (%s)", quote(rel), kindOf(info.Mode()))
	}
	return file, info, nil
}

// refuseLinked refuses a file with more than one hard link, unless they are
// allowed: os.Root confines paths, not files, and another link to the same
// file may be outside the root. info must come from Stat on the open file
// that is then used, so the file checked is the file read or written.
func (f *FS) refuseLinked(rel string, info fs.FileInfo) *tool.Result {
	if f.hardLinks || !hardlink.Shared(info) {
		return nil
	}
	return failf("%s", linkedMessage(rel, hardlink.Count(info)))
}

func linkedMessage(rel string, n uint64) string {
	return fmt.Sprintf("%s has %d hard links, so it is refused: the same file may also be outside the root. "+
		"Only files with a single link can be read or written here", quote(rel), n)
}

func (f *FS) read(ctx context.Context, a *argReader) *tool.Result {
	rel, perr := a.path("path", "")
	offset := a.int("offset", 1, math.MaxInt32)
	limit := a.int("limit", 1, math.MaxInt32)
	numbers := a.bool("line_numbers")
	if res := a.done("read", "path", "offset", "limit", "line_numbers"); res != nil {
		return res
	}
	if perr != nil {
		return failf("%s", perr.Error())
	}
	offset = max(offset, 1)
	file, info, res := f.openRegular(rel)
	if res != nil {
		return res
	}
	defer file.Close()
	size := info.Size()
	if offset == 1 && limit == 0 && !numbers && size > 0 && size <= f.maxRead {
		return f.readWhole(ctx, file, rel, size)
	}
	return f.readLines(ctx, file, rel, offset, limit, numbers)
}

// readWhole is the common case: the whole of a file within the limit, in
// one read and without copying.
func (f *FS) readWhole(ctx context.Context, file *os.File, rel string, size int64) *tool.Result {
	// One byte more than the size, to see whether the file grew.
	buf := make([]byte, size+1)
	n, err := io.ReadFull(file, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return failf("%s", f.describe(rel, err))
	}
	buf = buf[:n]
	if int64(n) > size {
		// The file is growing under us; the line reader bounds it.
		if _, err := file.Seek(0, io.SeekStart); err != nil {
			return failf("%s", f.describe(rel, err))
		}
		return f.readLines(ctx, file, rel, 1, 0, false)
	}
	if bytes.IndexByte(buf[:min(n, binaryProbe)], 0) >= 0 {
		return binaryFile(rel, int64(n))
	}
	if n == 0 {
		return &tool.Result{Content: "", Value: ReadResult{Path: rel, Offset: 1}}
	}
	// buf is never written again, so it can back the string directly.
	content := unsafe.String(unsafe.SliceData(buf), n)
	return &tool.Result{Content: content, Value: ReadResult{Path: rel, Offset: 1, Bytes: n}}
}

func binaryFile(rel string, size int64) *tool.Result {
	return failf("%s looks like a binary file (%d bytes, containing NUL bytes); read handles text files only", quote(rel), size)
}

// readLines streams the file line by line, keeping only the requested
// lines, so a range deep into a large file costs no more memory than the
// range itself.
func (f *FS) readLines(ctx context.Context, file *os.File, rel string, offset, limit int, numbers bool) *tool.Result {
	br := bufio.NewReaderSize(file, 64<<10)
	if head, _ := br.Peek(binaryProbe); bytes.IndexByte(head, 0) >= 0 {
		st, _ := file.Stat()
		var size int64
		if st != nil {
			size = st.Size()
		}
		return binaryFile(rel, size)
	}
	var (
		out       []byte
		line      = 1    // the line being read
		atStart   = true // the next chunk starts a line
		lineStart = 0    // len(out) where the current line began
		emitted   = 0    // lines started in out
		footer    string
		next      int
		chunks    int
	)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if line >= offset {
				if atStart {
					if limit > 0 && emitted == limit {
						next = line
						footer = fmt.Sprintf("[more lines follow; continue with offset=%d]", line)
						break
					}
					lineStart = len(out)
					if numbers {
						out = fmt.Appendf(out, "%6d\t", line)
					}
					emitted++
				}
				if int64(len(out)+len(chunk)) > f.maxRead {
					if emitted > 1 {
						out = out[:lineStart]
						emitted--
						next = line
						footer = fmt.Sprintf("[stopped at the %d-byte read limit; continue with offset=%d]", f.maxRead, line)
					} else {
						keep := int(f.maxRead) - len(out)
						for keep > 0 && !utf8.RuneStart(chunk[keep]) {
							keep--
						}
						out = append(out, chunk[:max(keep, 0)]...)
						next = line + 1
						footer = fmt.Sprintf("[line %d is longer than the %d-byte read limit and was cut; continue with offset=%d]", line, f.maxRead, line+1)
					}
					break
				}
				out = append(out, chunk...)
			}
			atStart = chunk[len(chunk)-1] == '\n'
			if atStart {
				line++
			}
		}
		if err == bufio.ErrBufferFull {
			err = nil
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return failf("%s", f.describe(rel, err))
		}
		if chunks++; chunks%1024 == 0 && ctx.Err() != nil {
			return failf("reading %s was cancelled", quote(rel))
		}
	}
	if emitted == 0 && footer == "" && offset > 1 {
		lines := line - 1
		if !atStart {
			lines = line
		}
		return failf("offset %d is past the end of %s, which has %d lines", offset, quote(rel), lines)
	}
	v := ReadResult{Path: rel, Offset: offset, Bytes: len(out), NextOffset: next}
	if footer != "" {
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		out = append(out, footer...)
	}
	return &tool.Result{Content: string(out), Value: v}
}
