// Package pgtest runs a throwaway PostgreSQL server for tests: initdb in a
// temporary folder, the server on a free loopback port, as an unprivileged
// user when the tests run as root (initdb refuses root).
//
// The server starts on first use and stops when the package's TestMain
// returns from Main. Tests skip only when LODE_TEST_POSTGRES=off; missing
// binaries are a failure that says to install Debian's postgresql package.
package pgtest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Env is the variable that turns the PostgreSQL tests off when "off".
const Env = "LODE_TEST_POSTGRES"

var (
	once    sync.Once
	shared  *Server
	initErr error
)

// Main runs the tests and stops the server if one was started. Call it from
// TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		if err := shared.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
	return code
}

// Shared returns the package's server, starting it on first use. It skips t
// when LODE_TEST_POSTGRES=off and fails it when no server can be started.
func Shared(t testing.TB) *Server {
	t.Helper()
	if os.Getenv(Env) == "off" {
		t.Skip("PostgreSQL tests skipped: " + Env + "=off")
	}
	once.Do(func() {
		// Benchmarks measure a durable server; tests run faster without
		// fsync, which they do not exercise.
		durable := false
		if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
			durable = true
		}
		shared, initErr = Start(durable)
	})
	if initErr != nil {
		t.Fatalf("PostgreSQL test server: %v", initErr)
	}
	return shared
}

// Server is a running PostgreSQL server owned by the test process.
type Server struct {
	bin     string
	dir     string
	port    int
	durable bool
	cred    *syscall.Credential
	dbs     atomic.Int64

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *syncBuffer
}

// syncBuffer collects the server's output, written by exec's copying
// goroutine while tests may read it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Start initialises a cluster in a new temporary folder and starts it.
func Start(durable bool) (*Server, error) {
	bin, err := findBin(debianBins)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lode-pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, durable: durable}
	if err := s.setup(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *Server) setup() error {
	if os.Geteuid() == 0 {
		cred, err := unprivileged()
		if err != nil {
			return err
		}
		s.cred = cred
		if err := os.Chown(s.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	var out bytes.Buffer
	cmd := s.command("initdb", "-D", s.data(), "-U", "lode", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out.String())
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	s.port = port
	return s.Restart()
}

// debianBins is where Debian's postgresql package puts the server binaries.
const debianBins = "/usr/lib/postgresql/*/bin"

// findBin finds the folder holding initdb and postgres: $PATH first, then
// the folders matching pattern (Debian's, newest version first).
func findBin(pattern string) (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob(pattern)
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("initdb and postgres not found on $PATH or in " + pattern + ": install PostgreSQL (Debian: apt-get install -y postgresql), or set " + Env + "=off to skip these tests")
}

// unprivileged returns the user the server runs as under root: postgres
// (made by Debian's package) or else nobody.
func unprivileged() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 == nil && err2 == nil {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
		}
	}
	return nil, errors.New("running as root, and neither user postgres nor nobody exists to run PostgreSQL as")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = []string{"HOME=" + s.dir, "LC_ALL=C", "PATH=" + s.bin + ":/usr/bin:/bin"}
	cmd.SysProcAttr = sysProcAttr(s.cred)
	return cmd
}

// Restart starts the server (again, after Stop) and waits until it
// accepts connections.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("pgtest: server already running")
	}
	args := []string{"-D", s.data(), "-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=" + s.dir,
		"-c", "max_connections=60",
		"-c", "shared_buffers=32MB",
	}
	if !s.durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	s.log = &syncBuffer{}
	cmd := s.command("postgres", args...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db := s.open("postgres")
	defer db.Close()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		err := db.PingContext(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-done:
			s.cmd = nil
			return fmt.Errorf("postgres exited during start-up: %s", s.log.String())
		case <-ctx.Done():
			s.stopLocked()
			return fmt.Errorf("postgres not ready after 60s (%v): %s", err, s.log.String())
		case <-tick.C:
		}
	}
}

// Stop shuts the server down (fast shutdown), keeping its data.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked()
}

func (s *Server) stopLocked() error {
	if s.cmd == nil {
		return nil
	}
	s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
	return nil
}

// Close stops the server and removes its folder.
func (s *Server) Close() error {
	s.Stop()
	return os.RemoveAll(s.dir)
}

// PID is the server's process ID (its postmaster's), 0 while stopped.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// DSN returns the URL of database db on the server.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://lode@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

func (s *Server) open(db string) *sql.DB {
	cfg, err := pgx.ParseConfig(s.DSN(db))
	if err != nil {
		panic(err) // DSN is ours
	}
	return stdlib.OpenDB(*cfg)
}

// NewDatabase creates an empty database and returns its DSN.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.dbs.Add(1))
	db := s.open("postgres")
	defer db.Close()
	if _, err := db.ExecContext(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	return s.DSN(name)
}

// Log returns what the server printed since it last started.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}
