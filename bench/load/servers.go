package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's "pgx", to make each run's database

	"github.com/lodeworks/lode/internal/pgtest"
)

// The servers a run can measure.
const (
	serverFile     = "file"     // lode web, file store
	serverSQLite   = "sqlite"   // lode web, SQLite
	serverPostgres = "postgres" // lode web, PostgreSQL
	serverAISDK    = "aisdk"    // the AI SDK's Node server
)

// target is a server under test, running.
type target struct {
	name     string
	url      string // its chat endpoint
	pid      int
	storePID int // the PostgreSQL server's, for its CPU; 0 for none
	cmd      *exec.Cmd
	done     chan error
	stderr   *tail
}

// stop ends the server (SIGTERM, then SIGKILL after 10 s).
func (t *target) stop() {
	t.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-t.done:
	case <-time.After(10 * time.Second):
		t.cmd.Process.Kill()
		<-t.done
	}
}

// tail keeps the last 4 KiB a process wrote, for error messages.
type tail struct{ b []byte }

func (t *tail) add(line string) {
	t.b = append(t.b, line...)
	t.b = append(t.b, '\n')
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
}

// env is what every measurement's servers share: the lode binary, the
// Node server, the PostgreSQL server and a folder for stores.
type env struct {
	lode     string // the lode binary
	node     string // Node.js 22
	script   string // node/server.mjs
	work     string
	modelURL string
	pg       *pgtest.Server
	runs     int
	pprof    string // LODE_PPROF for lode web
}

// start starts the server name and waits until it accepts requests.
func (e *env) start(ctx context.Context, name string) (*target, error) {
	e.runs++
	var cmd *exec.Cmd
	storePID := 0
	switch name {
	case serverAISDK:
		cmd = exec.Command(e.node, e.script)
		cmd.Env = append(os.Environ(), "PORT=0", "MODEL_URL="+e.modelURL, "NODE_ENV=production")
		cmd.Dir = filepath.Dir(e.script)
	case serverFile, serverSQLite, serverPostgres:
		dir := filepath.Join(e.work, fmt.Sprintf("run%d", e.runs))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		cfg := fmt.Sprintf("model:\n  base_url: %s\n  name: fake\ntools:\n  calculator: {}\n", e.modelURL)
		if err := os.WriteFile(filepath.Join(dir, "lode.yaml"), []byte(cfg), 0o644); err != nil {
			return nil, err
		}
		var store string
		switch name {
		case serverFile:
			store = filepath.Join(dir, "threads")
		case serverSQLite:
			store = "sqlite:" + filepath.Join(dir, "threads.db")
		case serverPostgres:
			if e.pg == nil {
				return nil, errors.New("no PostgreSQL server")
			}
			db := fmt.Sprintf("load%d_%d", os.Getpid(), e.runs)
			if err := createDatabase(ctx, e.pg.DSN("postgres"), db); err != nil {
				return nil, err
			}
			store = e.pg.DSN(db)
			storePID = e.pg.PID()
		}
		cmd = exec.Command(e.lode, "web", "--config", filepath.Join(dir, "lode.yaml"), "--store", store, "--addr", "127.0.0.1:0")
		cmd.Env = append(os.Environ(), "OPENAI_API_KEY=fake", "OTEL_SDK_DISABLED=true")
		if e.pprof != "" {
			cmd.Env = append(cmd.Env, "LODE_PPROF="+e.pprof)
		}
		cmd.Dir = dir
	default:
		return nil, fmt.Errorf("no server %q: give file, sqlite, postgres or aisdk", name)
	}
	out, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = cmd.Stderr // both to the pipe: Node prints to stdout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	t := &target{name: name, pid: cmd.Process.Pid, storePID: storePID, cmd: cmd, done: make(chan error, 1), stderr: &tail{}}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			t.stderr.add(line)
			if _, a, ok := strings.Cut(line, "chat at http://"); ok {
				addr <- strings.TrimSuffix(a, "/")
			} else if port, ok := strings.CutPrefix(line, "listening "); ok {
				addr <- "127.0.0.1:" + port
			}
		}
		io.Copy(io.Discard, out)
		t.done <- cmd.Wait()
	}()
	select {
	case a := <-addr:
		t.url = "http://" + a + "/api/chat"
		return t, nil
	case err := <-t.done:
		return nil, fmt.Errorf("%s exited before it listened (%v): %s", name, err, t.stderr.b)
	case <-time.After(60 * time.Second):
		t.stop()
		return nil, fmt.Errorf("%s did not listen within 60s: %s", name, t.stderr.b)
	}
}

func createDatabase(ctx context.Context, dsn, name string) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, "CREATE DATABASE "+name)
	return err
}
