package cli

import (
	"encoding/json"
	"fmt"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/tool"
)

// The JSON that `lathe call --json` and `lathe batch --json` print. Its
// own field names are snake_case, like the process protocol, the audit
// records and the configuration; a question has the protocol's shape
// (answer_type); content blocks keep MCP's shapes, which the protocol
// uses too (mimeType). Calls count from 1 everywhere, as in the text
// output and in --answer N:ID=VALUE.

// outcomeJSON is one call's outcome: exactly one of Result and Question,
// or, for a call of a batch that has not run, WaitsFor.
type outcomeJSON struct {
	// Call is the call's position in its batch, from 1; absent for
	// `lathe call`.
	Call int    `json:"call,omitempty"`
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
	// Answers are the answers the call carried. A later run of the batch
	// with --previous carries them on, so that a call that asks one
	// question after another keeps the earlier answers.
	Answers  map[string]any     `json:"answers,omitempty"`
	Result   *resultJSON        `json:"result,omitempty"`
	Question *protocol.Question `json:"question,omitempty"`
	// WaitsFor lists the calls, counted from 1, that asked questions
	// this call must follow.
	WaitsFor []int `json:"waits_for,omitempty"`
}

type resultJSON struct {
	Content    []tool.Content  `json:"content"`
	Structured json.RawMessage `json:"structured,omitempty"`
	IsError    bool            `json:"is_error,omitempty"`
	ErrorKind  tool.ErrorKind  `json:"error_kind,omitempty"`
}

// encodeOutcome returns the JSON form of call c's outcome o, and of the
// calls it waits for, counted from 0; n is the call's position in its batch
// counting from 0, or -1 outside a batch.
func encodeOutcome(n int, c *tool.Call, o *tool.Outcome, waitsFor []int) outcomeJSON {
	w := outcomeJSON{ID: c.ID, Name: c.Name, Answers: c.Answers}
	if n >= 0 {
		w.Call = n + 1
	}
	if r := o.Result; r != nil {
		content := r.Content
		if content == nil {
			content = []tool.Content{}
		}
		w.Result = &resultJSON{Content: content, Structured: r.Structured, IsError: r.IsError, ErrorKind: r.ErrorKind}
	}
	if q := o.Question; q != nil {
		w.Question = &protocol.Question{ID: q.ID, Text: q.Text,
			AnswerType: protocol.AnswerType{Kind: q.Kind, Options: q.Options}, Default: q.Default}
	}
	for _, j := range waitsFor {
		w.WaitsFor = append(w.WaitsFor, j+1)
	}
	return w
}

// decodeOutcome is the reverse of encodeOutcome, for --previous; calls is
// the batch's length, which WaitsFor must stay within.
func decodeOutcome(w *outcomeJSON, calls int) (lathe.BatchOutcome, error) {
	var o lathe.BatchOutcome
	if r := w.Result; r != nil {
		o.Result = &tool.Result{Content: r.Content, Structured: r.Structured, IsError: r.IsError, ErrorKind: r.ErrorKind}
		if o.Result.Content == nil {
			o.Result.Content = []tool.Content{}
		}
	}
	if q := w.Question; q != nil {
		kind := q.AnswerType.Kind
		if kind == "" {
			kind = tool.QuestionText
		}
		o.Question = &tool.Question{ID: q.ID, Text: q.Text, Kind: kind, Options: q.AnswerType.Options, Default: q.Default}
	}
	for _, j := range w.WaitsFor {
		if j < 1 || j > calls {
			return o, fmt.Errorf("waits_for names call %d; calls count from 1 to %d", j, calls)
		}
		o.WaitsFor = append(o.WaitsFor, j-1)
	}
	return o, nil
}
