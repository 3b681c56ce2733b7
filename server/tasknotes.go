package server

import (
	"context"
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A task's progress and log messages (MCP 2025-11-25). The call of a task
// reports to the session that made it, as any call does; but that client
// may have gone away, and come back in another session with the task's ID.
// So the task keeps what its call reported — the last maxTaskNotes
// messages, at most maxTaskNoteBytes of them — and each session of the
// task's principal that presents the ID (tasks/get, tasks/result,
// tasks/cancel) is sent, on the stream of that request, what it has not
// been sent yet; while a session waits in tasks/result, what the call
// reports reaches it there as it comes. A session that presents an ID
// that is not its principal's is told of no task, and sent nothing (see
// presented). A log message is kept only if the session it was sent to
// wanted it (its level), and reaches another session only if that one
// wants it too. A client of 2026-07-28 gets neither: it cannot be sent
// anything while its own request is served, and polls tasks/get.

const (
	maxTaskNotes     = 64
	maxTaskNoteBytes = 64 << 10
)

// taskNote is one message a task's call sent its client.
type taskNote struct {
	seq    int
	params sdk.Params // *sdk.ProgressNotificationParams or *sdk.LoggingMessageParams
	size   int
}

// replayKey marks the context of a kept message sent again, which is not
// kept again.
type replayKey struct{}

// noted is whether method is one a task keeps.
func noted(method string) bool {
	return method == "notifications/progress" || method == "notifications/message"
}

// keep keeps a message the call of t sends the session ss, and sends it to
// the other sessions that wait for t.
func (ts *taskStore) keep(t *task, ss *sdk.ServerSession, p sdk.Params) {
	var cp sdk.Params
	switch p := p.(type) {
	case *sdk.ProgressNotificationParams:
		c := *p
		cp = &c
	case *sdk.LoggingMessageParams:
		c := *p
		cp = &c
	default:
		return
	}
	b, _ := json.Marshal(cp)
	ts.mu.Lock()
	t.noteSeq++
	t.notes = append(t.notes, taskNote{seq: t.noteSeq, params: cp, size: len(b)})
	t.noteBytes += len(b)
	for len(t.notes) > maxTaskNotes || len(t.notes) > 1 && t.noteBytes > maxTaskNoteBytes {
		t.noteBytes -= t.notes[0].size
		t.notes[0] = taskNote{}
		t.notes = t.notes[1:]
	}
	if t.seen == nil {
		t.seen = map[*sdk.ServerSession]int{}
	}
	// The session it is sent to has it.
	t.seen[ss] = t.noteSeq
	var waiting []*route
	for r := range t.routes {
		if r.ss != ss {
			waiting = append(waiting, r)
		}
	}
	ts.mu.Unlock()
	for _, r := range waiting {
		ts.catchUp(t, r.ss, r.ctx)
	}
}

// catchUp sends ss, in ctx, the kept messages of t it has not been sent.
func (ts *taskStore) catchUp(t *task, ss *sdk.ServerSession, ctx context.Context) {
	ts.mu.Lock()
	from := t.seen[ss]
	var send []taskNote
	for _, n := range t.notes {
		if n.seq > from {
			send = append(send, n)
		}
	}
	if len(send) > 0 {
		if t.seen == nil {
			t.seen = map[*sdk.ServerSession]int{}
		}
		t.seen[ss] = send[len(send)-1].seq
	}
	ts.mu.Unlock()
	if len(send) == 0 {
		return
	}
	// Marked as the task's (taskSending), and not kept again.
	ctx = context.WithValue(context.WithValue(ctx, taskKey{}, t), replayKey{}, true)
	for _, n := range send {
		switch p := n.params.(type) {
		case *sdk.ProgressNotificationParams:
			_ = ss.NotifyProgress(ctx, p)
		case *sdk.LoggingMessageParams:
			_ = ss.Log(ctx, p)
		}
	}
}

// keepNote keeps what the call of the task in ctx sends, if it is a
// message a task keeps (see taskSending).
func (s *Server) keepNote(ctx context.Context, t *task, method string, req sdk.Request) {
	if !noted(method) || ctx.Value(replayKey{}) != nil {
		return
	}
	ss, ok := req.GetSession().(*sdk.ServerSession)
	if !ok || multiRound(ss) {
		return
	}
	s.tasks.keep(t, ss, req.GetParams())
}
