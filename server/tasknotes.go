package server

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/internal/mcpconv"
	"github.com/lathe-tools/lathe/tool"
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
// wants it too.
//
// The tasks extension of MCP 2026-07-28 sends no notifications/progress or
// notifications/message for a task ("not supported on tasks"), and a
// client of that version cannot be sent anything while its own request is
// served. Its task keeps the same messages, and hands them over in the
// task itself: the task's statusMessage says its latest progress, as the
// extension suggests, and its _meta["lathe/notes"] lists the kept
// messages, each with its number ("seq"), in tasks/get and in every
// notifications/tasks of a subscriptions/listen that named the task (see
// tasknotify.go). tasks/get lists those after _meta["lathe/notesAfter"]
// of its request; a listen is sent each message once. Log messages are
// listed at and above the level the request or the listen names in its
// _meta (io.modelcontextprotocol/logLevel), and none when it names none,
// as that version has it for a request's own log messages. Only the
// principal of the task sees them, as only it sees the task.

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

// addNote keeps p, size bytes encoded, among t's last messages: at most
// maxTaskNotes of them, and at most maxTaskNoteBytes but for the last one.
// The task store's lock is held.
func (t *task) addNote(p sdk.Params, size int) {
	t.noteSeq++
	t.notes = append(t.notes, taskNote{seq: t.noteSeq, params: p, size: size})
	t.noteBytes += size
	for len(t.notes) > maxTaskNotes || len(t.notes) > 1 && t.noteBytes > maxTaskNoteBytes {
		t.noteBytes -= t.notes[0].size
		t.notes[0] = taskNote{}
		t.notes = t.notes[1:]
	}
}

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
	t.addNote(cp, len(b))
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

// notesKey lists a task's kept messages in its _meta (MCP 2026-07-28).
const notesKey = "lathe/notes"

// notesAfterKey, in a tasks/get's _meta, asks only for the messages after
// that number.
const notesAfterKey = "lathe/notesAfter"

// note26 is one kept message as a task of MCP 2026-07-28 lists it.
type note26 struct {
	Seq    int        `json:"seq"`
	Method string     `json:"method"`
	Params sdk.Params `json:"params"`
}

// notes26 are the log and progress hooks of the call of t, a task of a
// client of MCP 2026-07-28: what they report is kept with t, and t's
// change is told its listeners. Progress is kept whether or not the
// tools/call named a progress token: the task is what its client follows.
// Until the client is given the task's handle its tools/call is still
// open, and a call that ends before then is answered as a plain call: what
// the call reports goes on that request too, through log and progress (the
// hooks of a plain call, progress nil without a token), and no longer once
// the call is a task, which the extension sends no such messages for.
func (ts *taskStore) notes26(t *task, sendLog func(tool.LogMessage), sendProgress func(tool.Progress)) (func(tool.LogMessage), func(tool.Progress)) {
	log := func(m tool.LogMessage) {
		if sendLog != nil && !t.handed.Load() {
			sendLog(m)
		}
		ts.keep26(t, &sdk.LoggingMessageParams{Level: sdk.LoggingLevel(m.Level), Logger: m.Logger,
			Data: json.RawMessage(m.Data)}, "")
	}
	progress := func(p tool.Progress) {
		if sendProgress != nil && !t.handed.Load() {
			sendProgress(p)
		}
		msg := p.Message
		if msg == "" {
			msg = "progress " + strconv.FormatFloat(p.Progress, 'g', -1, 64)
			if p.Total > 0 {
				msg += " of " + strconv.FormatFloat(p.Total, 'g', -1, 64)
			}
		}
		ts.keep26(t, &sdk.ProgressNotificationParams{Progress: p.Progress, Total: p.Total, Message: p.Message}, msg)
	}
	return log, progress
}

// keep26 keeps p, a message of the call of t, and tells t's listeners;
// status, when set, becomes t's status message.
func (ts *taskStore) keep26(t *task, p sdk.Params, status string) {
	b, err := json.Marshal(p)
	if err != nil {
		return
	}
	ts.mu.Lock()
	if mcpconv.Terminal(t.status) {
		// Reported as the call ended (cancelled, say): the task's state
		// is final.
		ts.mu.Unlock()
		return
	}
	t.addNote(p, len(b))
	if status != "" {
		t.message = status
	}
	t.updated = time.Now()
	ts.mu.Unlock()
	ts.notify(t)
}

// notesLocked lists the kept messages of t after the number after, log
// messages at and above level only (none when level is ""), and returns
// the number of the last kept message. ts.mu is held.
func (t *task) notesLocked(after int, level sdk.LoggingLevel) ([]note26, int) {
	var out []note26
	for _, n := range t.notes {
		if n.seq <= after {
			continue
		}
		method := "notifications/progress"
		if lm, ok := n.params.(*sdk.LoggingMessageParams); ok {
			if level == "" || severity(lm.Level) < severity(level) {
				continue
			}
			method = "notifications/message"
		}
		out = append(out, note26{Seq: n.seq, Method: method, Params: n.params})
	}
	return out, t.noteSeq
}

// notesWanted reads, from a request's _meta, the log level it names and
// the number of the last message it has.
func notesWanted(meta map[string]any) (level sdk.LoggingLevel, after int) {
	if l, ok := meta[sdk.MetaKeyLogLevel].(string); ok && severity(sdk.LoggingLevel(l)) >= 0 {
		level = sdk.LoggingLevel(l)
	}
	if n, ok := meta[notesAfterKey].(float64); ok && n >= 0 && n == float64(int(n)) {
		after = int(n)
	}
	return level, after
}

// withNotes adds to d, the task t as the extension sends it, the kept
// messages after the number after, log messages at and above level, and
// returns the number of the last message kept.
func (ts *taskStore) withNotes(d *detailedTask, t *task, level sdk.LoggingLevel, after int) int {
	ts.mu.Lock()
	notes, last := t.notesLocked(after, level)
	ts.mu.Unlock()
	if len(notes) > 0 {
		if d.Meta == nil {
			d.Meta = map[string]any{}
		}
		d.Meta[notesKey] = notes
	}
	return last
}
