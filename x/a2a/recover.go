package a2a

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/auth"
)

// Recover finishes the tasks a process over the same store left working
// when it stopped (a crash, a SIGKILL, a Close mid-turn): each context's
// run goes on from its stored turns, as loop.Run continues a thread (a
// call left without a result gets loop.InterruptedMessage), and the task
// ends as a turn served here would: completed, input-required or failed.
// A task that waited for input needs nothing: the caller's answer, after
// the restart, continues it. It returns the IDs of the tasks it finished.
//
// Call it once at start, before serving, with the store no other live
// process serves: a working task is taken to be abandoned.
func (s *Server) Recover(ctx context.Context) ([]a2a.TaskID, error) {
	recs, err := s.tasks.unfinished(ctx)
	var done []a2a.TaskID
	for _, rec := range recs {
		if err := s.recoverTask(ctx, rec); err != nil {
			return done, fmt.Errorf("a2a: recover task %s: %w", rec.Task.ID, err)
		}
		done = append(done, rec.Task.ID)
	}
	return done, err
}

func (s *Server) recoverTask(ctx context.Context, rec record) error {
	task := rec.Task
	tid, err := contextThread(task.ContextID)
	if err != nil {
		return err
	}
	st, err := s.store.Load(ctx, tid)
	if err != nil {
		return err
	}
	defer st.Close()
	who := auth.Of(st)
	ctx = context.WithValue(ctx, whoKey{}, who)
	if rec.Owner != who.User {
		return fmt.Errorf("the task's owner %q is not its context's (%q)", rec.Owner, who.User)
	}
	step := loop.New(append(s.cfg.loop[:len(s.cfg.loop):len(s.cfg.loop)], loop.WithLease(-1))...)
	var runErr error
	if len(loop.Pending(st)) == 0 {
		_, runErr = step.Run(ctx, st, s.prov)
	} else {
		runErr = &loop.PendingError{Thread: st.ID(), Calls: loop.Pending(st)}
	}
	info := task.TaskInfo()
	var ev *a2a.TaskStatusUpdateEvent
	switch {
	case runErr == nil:
		ev = a2a.NewStatusUpdateEvent(info, a2a.TaskStateCompleted, nil)
		_ = st.SetMetadata(WaitingKey, "")
	case errors.Is(runErr, loop.ErrPaused):
		if err := st.SetMetadata(WaitingKey, string(task.ID)); err != nil {
			return err
		}
		ev = s.waiting(info, st, "")
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		s.cfg.logger.WarnContext(ctx, "lode: a2a recovered turn failed", "thread", st.ID(), "task", task.ID, "err", runErr)
		ev = s.failed(info, runErr)
	}
	now := time.Now()
	ev.Status.Timestamp = &now
	task.Status = ev.Status
	if text, ok := loop.Answer(st); ok {
		// The whole answer, whatever the dead process had streamed.
		task.Artifacts = []*a2a.Artifact{{ID: AnswerArtifact, Name: AnswerArtifact, Parts: a2a.ContentParts{a2a.NewTextPart(text)}}}
	}
	_, err = s.tasks.Update(ctx, &taskstore.UpdateRequest{Task: task, Event: ev, PrevVersion: taskstore.TaskVersion(rec.Version)})
	return err
}
