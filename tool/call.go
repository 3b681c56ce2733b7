package tool

import (
	"encoding/json"
)

// Call is one request to run a tool.
type Call struct {
	// ID identifies the call to its caller; the engine does not interpret it.
	ID string `json:"id,omitempty"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Arguments is a JSON object; empty means {}.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Answers holds answers to questions an earlier run of the same call asked,
	// keyed by [Question.ID]. A tool that asked is run again from the start with
	// them, so a conversation with a tool survives restarts of the engine.
	Answers map[string]any `json:"answers,omitempty"`
}

// Outcome is what a call produces: a Result, or a Question the tool needs
// answered before it can go on. Exactly one of the two is set.
type Outcome struct {
	Result   *Result   `json:"result,omitempty"`
	Question *Question `json:"question,omitempty"`
}

// Err returns the call's failure as a Go error, or nil when the call did not
// fail (a question is not a failure). The error is an [*Error] whose Kind is
// the result's ErrorKind; errors.Is matches it against the sentinels of this
// package, and errors.As reaches the original cause where the engine had one.
func (o *Outcome) Err() error {
	if o == nil || o.Result == nil || !o.Result.IsError {
		return nil
	}
	r := o.Result
	kind := r.ErrorKind
	if kind == "" {
		kind = KindToolError
	}
	if r.cause != nil {
		if e, ok := r.cause.(*Error); ok {
			return e
		}
		return &Error{Kind: kind, Err: r.cause}
	}
	return &Error{Kind: kind, Message: r.Text()}
}

// Result is the product of a call that ran to an end.
type Result struct {
	// Content is what a model reads.
	Content []Content `json:"content"`
	// Structured is an optional JSON value, valid against the tool's OutputSchema.
	Structured json.RawMessage `json:"structured,omitempty"`
	// IsError says the call failed; ErrorKind says how.
	IsError   bool      `json:"isError,omitempty"`
	ErrorKind ErrorKind `json:"errorKind,omitempty"`

	cause error
}

// Text joins the text content blocks of r with newlines. A nil r has no
// text: out.Result.Text() is "" for an outcome that is a question.
func (r *Result) Text() string {
	if r == nil {
		return ""
	}
	var n int
	for _, c := range r.Content {
		if c.Type == ContentText {
			n += len(c.Text) + 1
		}
	}
	b := make([]byte, 0, n)
	for _, c := range r.Content {
		if c.Type != ContentText {
			continue
		}
		if len(b) > 0 {
			b = append(b, '\n')
		}
		b = append(b, c.Text...)
	}
	return string(b)
}

// TextResult returns a successful result holding one text block.
func TextResult(text string) *Result {
	return &Result{Content: []Content{{Type: ContentText, Text: text}}}
}

// ErrorResult returns an error result for err. Its kind is taken from the
// [*Error] in err's chain, if there is one, and is [KindToolError] otherwise.
// [Outcome.Err] gives err back.
func ErrorResult(err error) *Result {
	kind := KindOf(err)
	return &Result{
		Content:   []Content{{Type: ContentText, Text: err.Error()}},
		IsError:   true,
		ErrorKind: kind,
		cause:     err,
	}
}

// ContentType names the kind of a content block; the values are MCP's.
type ContentType string

const (
	ContentText         ContentType = "text"
	ContentImage        ContentType = "image"
	ContentAudio        ContentType = "audio"
	ContentResourceLink ContentType = "resource_link"
	ContentResource     ContentType = "resource"
)

// Content is one block of a result. Type says which fields are used:
//
//   - text: Text
//   - image, audio: Data (raw bytes, base64 in JSON) and MIMEType
//   - resource_link: URI, with optional Name, Title, Description, MIMEType
//   - resource: Resource, an embedded resource
type Content struct {
	Type        ContentType       `json:"type"`
	Text        string            `json:"text,omitempty"`
	Data        []byte            `json:"data,omitempty"`
	MIMEType    string            `json:"mimeType,omitempty"`
	URI         string            `json:"uri,omitempty"`
	Name        string            `json:"name,omitempty"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Resource    *EmbeddedResource `json:"resource,omitempty"`
}

// EmbeddedResource is the contents of a resource carried inside a result:
// Text for a text resource, Blob for a binary one.
type EmbeddedResource struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     []byte `json:"blob,omitempty"`
}

// QuestionKind says what sort of answer a question wants.
type QuestionKind string

const (
	QuestionBoolean QuestionKind = "boolean"
	QuestionText    QuestionKind = "text"
	QuestionSelect  QuestionKind = "select"
)

// Question is what a tool asks when it needs input before it can go on. The
// caller answers by calling again with Answers[ID] set.
type Question struct {
	// ID keys the answer in [Call.Answers].
	ID string `json:"id"`
	// Text is what to ask a person.
	Text string `json:"text"`
	// Kind is boolean, text or select; select offers Options.
	Kind    QuestionKind `json:"kind"`
	Options []string     `json:"options,omitempty"`
	// Default, if set, is the answer a person gets by accepting the prompt.
	Default any `json:"default,omitempty"`
}
