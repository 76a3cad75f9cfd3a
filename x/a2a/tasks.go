package a2a

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/lodeworks/lode/ledger"
)

// Thread IDs and metadata keys the server writes in the ledger store.
const (
	// ContextPrefix starts the ID of the thread that holds an A2A
	// context's conversation: ContextPrefix + contextId.
	ContextPrefix = "a2a-ctx-"
	// TaskPrefix starts the ID of the thread that records an A2A task:
	// TaskPrefix + taskId. It holds no turns, only TaskKey.
	TaskPrefix = "a2a-task-"
	// TaskKey holds a task thread's record: the task as A2A sends it,
	// its version and its owner, as JSON.
	TaskKey = "a2a.task"
	// WaitingKey, on a context's thread, names the task whose calls wait
	// for a decision.
	WaitingKey = "a2a.waiting"
)

// contextThread returns the ID of the thread of contextID, or an error
// when contextID cannot name one: a context ID comes from the caller, so
// it is held to the ledger's ID rule rather than cleaned.
func contextThread(contextID string) (string, error) {
	id := ContextPrefix + contextID
	if err := ledger.CheckID(id); err != nil {
		return "", a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("a2a: contextId %.80q cannot name a thread: use 1 to %d letters, digits, '_', '-' or '.'", contextID, ledger.MaxIDLen-len(ContextPrefix)))
	}
	return id, nil
}

// errClosing: the server is closing and stores nothing more.
var errClosing = errors.New("a2a: the server is closing")

// record is what TaskKey holds.
type record struct {
	Version int64     `json:"version"`
	Owner   string    `json:"owner"`
	Task    *a2a.Task `json:"task"`
}

// taskEntry is a task whose thread is open: the last state the SDK wrote,
// which may be newer than the stored one by artifact chunks.
type taskEntry struct {
	mu      sync.Mutex
	st      *ledger.StoredThread
	rec     record
	removed bool
}

// tasks is the SDK's task store over a ledger.Store, so that a task
// outlives the process that ran it. Every status change is written before
// the SDK goes on; an artifact chunk is written with the next status
// change or its last chunk, since the context's thread holds the answer
// in full anyway and writing the whole task on every token would cost the
// square of the answer's length.
type tasks struct {
	store ledger.Store
	owner func(context.Context) string

	mu   sync.Mutex
	open map[a2a.TaskID]*taskEntry
	// closing refuses every write once the server closes: a turn it
	// cancelled must not be stored as failed, so Recover finishes it.
	closing atomic.Bool
}

var _ taskstore.Store = (*tasks)(nil)

func newTasks(store ledger.Store, owner func(context.Context) string) *tasks {
	return &tasks{store: store, owner: owner, open: make(map[a2a.TaskID]*taskEntry)}
}

func taskThread(id a2a.TaskID) (string, bool) {
	tid := TaskPrefix + string(id)
	return tid, ledger.CheckID(tid) == nil
}

// copyTask returns a deep copy through JSON, the form the task is kept in.
func copyTask(t *a2a.Task) (*a2a.Task, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("a2a: task %s cannot be stored: %w", t.ID, err)
	}
	var out a2a.Task
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("a2a: task %s cannot be stored: %w", t.ID, err)
	}
	return &out, nil
}

func (ts *tasks) Create(ctx context.Context, task *a2a.Task) (taskstore.TaskVersion, error) {
	tid, ok := taskThread(task.ID)
	if !ok {
		return 0, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("a2a: task id %.80q cannot name a task", task.ID))
	}
	cp, err := copyTask(task)
	if err != nil {
		return 0, err
	}
	rec := record{Version: 1, Owner: ts.owner(ctx), Task: cp}
	b, err := json.Marshal(rec)
	if err != nil {
		return 0, err
	}
	st, err := ts.store.Create(ctx, ledger.WithID(tid), ledger.WithMetadata(map[string]string{TaskKey: string(b)}))
	if errors.Is(err, ledger.ErrConflict) {
		return 0, taskstore.ErrTaskAlreadyExists
	}
	if err != nil {
		return 0, err
	}
	ts.mu.Lock()
	ts.open[task.ID] = &taskEntry{st: st, rec: rec}
	ts.mu.Unlock()
	return 1, nil
}

// entry returns the open entry of id, loading it from the store; an ID
// that names no task, or a task of another owner, is ErrTaskNotFound.
func (ts *tasks) entry(ctx context.Context, id a2a.TaskID) (*taskEntry, error) {
	ts.mu.Lock()
	e := ts.open[id]
	ts.mu.Unlock()
	if e == nil {
		tid, ok := taskThread(id)
		if !ok {
			return nil, a2a.ErrTaskNotFound
		}
		st, err := ts.store.Load(ctx, tid)
		if errors.Is(err, ledger.ErrNotFound) {
			return nil, a2a.ErrTaskNotFound
		}
		if err != nil {
			return nil, err
		}
		v, _ := st.Metadata(TaskKey)
		var rec record
		if err := json.Unmarshal([]byte(v), &rec); err != nil || rec.Task == nil {
			st.Close()
			return nil, fmt.Errorf("a2a: task %s: its record in thread %s cannot be read: %w", id, tid, ledger.ErrCorrupt)
		}
		ts.mu.Lock()
		if e = ts.open[id]; e == nil {
			e = &taskEntry{st: st, rec: rec}
			ts.open[id] = e
		} else {
			st.Close()
		}
		ts.mu.Unlock()
	}
	if e.owner() != ts.owner(ctx) {
		// As the protocol asks: another caller's task is not found.
		return nil, a2a.ErrTaskNotFound
	}
	return e, nil
}

func (e *taskEntry) owner() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rec.Owner
}

func (ts *tasks) Update(ctx context.Context, req *taskstore.UpdateRequest) (taskstore.TaskVersion, error) {
	if ts.closing.Load() {
		return 0, errClosing
	}
	e, err := ts.entry(ctx, req.Task.ID)
	if err != nil {
		return 0, err
	}
	cp, err := copyTask(req.Task)
	if err != nil {
		return 0, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.removed {
		return 0, taskstore.ErrConcurrentModification
	}
	if req.PrevVersion != taskstore.TaskVersionMissing && taskstore.TaskVersion(e.rec.Version) != req.PrevVersion {
		return 0, taskstore.ErrConcurrentModification
	}
	rec := record{Version: e.rec.Version + 1, Owner: e.rec.Owner, Task: cp}
	if chunk, ok := req.Event.(*a2a.TaskArtifactUpdateEvent); !ok || chunk.LastChunk {
		b, err := json.Marshal(rec)
		if err != nil {
			return 0, err
		}
		if err := e.st.SetMetadata(TaskKey, string(b)); err != nil {
			if errors.Is(err, ledger.ErrConflict) {
				return 0, taskstore.ErrConcurrentModification
			}
			return 0, err
		}
	}
	e.rec = rec
	if st := cp.Status.State; st.Terminal() || st == a2a.TaskStateInputRequired {
		// Stored whole and not running: the next Get reads it back from
		// the store, so a task that waits holds no open thread meanwhile.
		e.removed = true
		ts.mu.Lock()
		if ts.open[cp.ID] == e {
			delete(ts.open, cp.ID)
		}
		ts.mu.Unlock()
		e.st.Close()
	}
	return taskstore.TaskVersion(rec.Version), nil
}

func (ts *tasks) Get(ctx context.Context, id a2a.TaskID) (*taskstore.StoredTask, error) {
	e, err := ts.entry(ctx, id)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	rec := e.rec
	e.mu.Unlock()
	cp, err := copyTask(rec.Task)
	if err != nil {
		return nil, err
	}
	return &taskstore.StoredTask{Task: cp, Version: taskstore.TaskVersion(rec.Version), User: rec.Owner}, nil
}

// Paging of ListTasks, as A2A 1.0 bounds it.
const (
	defaultPageSize = 50
	maxPageSize     = 100
)

// listed is the part of a task record ListTasks filters by, read without
// the task's history and artifacts.
type listed struct {
	Owner string `json:"owner"`
	Task  *struct {
		ContextID string         `json:"contextId"`
		Status    a2a.TaskStatus `json:"status"`
	} `json:"task"`
}

// List lists the caller's tasks, filtered by context, state and status
// time, a page at a time in the order of their IDs: PageSize of them (50
// by default, 100 at most), after the task PageToken names. It holds one
// page in memory; it reads each task's record to count TotalSize, and
// whole only the tasks of the page.
func (ts *tasks) List(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	owner := ts.owner(ctx)
	size := req.PageSize
	switch {
	case size < 0 || size > maxPageSize:
		return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("a2a: pageSize %d: ask for 1 to %d tasks (0: %d)", size, maxPageSize, defaultPageSize))
	case size == 0:
		size = defaultPageSize
	}
	after := ""
	if req.PageToken != "" {
		raw, err := base64.RawURLEncoding.DecodeString(req.PageToken)
		if err != nil || !strings.HasPrefix(string(raw), TaskPrefix) {
			return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("a2a: pageToken %.80q is not one this agent gave: send the nextPageToken of the last page, or none for the first", req.PageToken))
		}
		after = string(raw)
	}
	resp := &a2a.ListTasksResponse{PageSize: size, Tasks: []*a2a.Task{}}
	last := ""
	for info, err := range ts.store.List(ctx) {
		if err != nil || !strings.HasPrefix(info.ID, TaskPrefix) {
			continue
		}
		raw := info.Metadata[TaskKey]
		var l listed
		if json.Unmarshal([]byte(raw), &l) != nil || l.Task == nil || l.Owner != owner {
			continue
		}
		if req.ContextID != "" && l.Task.ContextID != req.ContextID || req.Status != "" && l.Task.Status.State != req.Status {
			continue
		}
		if req.StatusTimestampAfter != nil && (l.Task.Status.Timestamp == nil || !l.Task.Status.Timestamp.After(*req.StatusTimestampAfter)) {
			continue
		}
		resp.TotalSize++
		if info.ID <= after {
			continue
		}
		if len(resp.Tasks) == size {
			resp.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(last))
			continue
		}
		var rec record
		if json.Unmarshal([]byte(raw), &rec) != nil || rec.Task == nil {
			resp.TotalSize--
			continue
		}
		t := rec.Task
		if req.HistoryLength != nil && *req.HistoryLength >= 0 && len(t.History) > *req.HistoryLength {
			t.History = t.History[len(t.History)-*req.HistoryLength:]
		}
		if !req.IncludeArtifacts {
			t.Artifacts = nil
		}
		resp.Tasks = append(resp.Tasks, t)
		last = info.ID
	}
	return resp, nil
}

// unfinished yields the tasks in the store that were working when their
// process stopped: neither ended nor waiting for the caller.
func (ts *tasks) unfinished(ctx context.Context) ([]record, error) {
	var out []record
	for info, err := range ts.store.List(ctx) {
		if err != nil {
			if strings.HasPrefix(info.ID, TaskPrefix) {
				return out, err
			}
			continue
		}
		if !strings.HasPrefix(info.ID, TaskPrefix) {
			continue
		}
		var rec record
		if json.Unmarshal([]byte(info.Metadata[TaskKey]), &rec) != nil || rec.Task == nil {
			continue
		}
		switch rec.Task.Status.State {
		case a2a.TaskStateSubmitted, a2a.TaskStateWorking:
			out = append(out, rec)
		}
	}
	return out, nil
}

func (ts *tasks) close() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for id, e := range ts.open {
		e.st.Close()
		delete(ts.open, id)
	}
}
