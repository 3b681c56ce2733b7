package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/lathe-tools/lathe/internal/jsonscan"
)

// endWithAnswer sends the answer to a POSTed request and the end of its
// response in one write, so that an HTTP client can keep its connection.
//
// The SDK answers a request over an event stream and flushes every event as
// it writes it, the answer too; the end of the stream (the last, empty
// chunk) follows in a write of its own when the handler returns. A client
// that stops reading once it has its answer (the go-sdk's does, as it
// should: the answer is the last event of the stream) finds the body not
// at its end and closes the connection, so that every call opened a new
// one: a TCP handshake and an accept, a goroutine and buffers on lathe's
// side, for each call. With the answer's flush left to the end of the
// handler, the answer and the end arrive together and the connection is
// kept.
//
// Only the answer is held, and only until the handler returns, which the
// SDK does as soon as it has written it: a stream's notifications and the
// server's own requests before it (progress, log messages, questions) are
// flushed as they are written, as before.
func endWithAnswer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := bodyOf(r)
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		id, ok := postedID(body)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(&answerWriter{ResponseWriter: w, id: id}, r)
	})
}

// postedID returns the id of the one request in body, decoded (a float64
// or a string), or false when body is not one request with an id (a
// notification, a response, a batch, or not JSON-RPC).
func postedID(body []byte) (any, bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(body, &m) != nil || m.Method == nil {
		return nil, false
	}
	return decodedID(m.ID)
}

// decodedID decodes a JSON-RPC id as the SDK takes it: a string, or a
// number, compared as a float64.
func decodedID(raw json.RawMessage) (any, bool) {
	s, f, num, ok := readID(raw)
	switch {
	case !ok:
		return nil, false
	case num:
		return f, true
	}
	return s, true
}

// readID reads a JSON-RPC id as the SDK takes it: a string s, or a number
// f (num set), compared as a float64; false for anything else. An id as
// clients write it, a number or a string without escapes, is read where it
// is; json.Unmarshal takes the rest.
func readID(raw json.RawMessage) (s string, f float64, num, ok bool) {
	if p, ok := jsonscan.PlainString(raw); ok {
		return string(p), 0, false, true
	}
	if jsonscan.Number(raw) {
		f, err := strconv.ParseFloat(string(raw), 64)
		return "", f, true, err == nil
	}
	var id any
	if json.Unmarshal(raw, &id) != nil {
		return "", 0, false, false
	}
	switch v := id.(type) {
	case string:
		return v, 0, false, true
	case float64:
		return "", v, true, true
	}
	return "", 0, false, false
}

// answerWriter passes a response stream on and holds back the flush of the
// event that answers the request id, and of anything after it.
type answerWriter struct {
	http.ResponseWriter
	id       any
	answered bool
}

func (a *answerWriter) Write(b []byte) (int, error) {
	if !a.answered && answers(b, a.id) {
		a.answered = true
	}
	return a.ResponseWriter.Write(b)
}

// FlushError is what http.ResponseController calls to flush: after the
// answer it does nothing, and the answer goes out with the end of the
// response.
func (a *answerWriter) FlushError() error {
	if a.answered {
		return nil
	}
	return http.NewResponseController(a.ResponseWriter).Flush()
}

func (a *answerWriter) Flush() { _ = a.FlushError() }

// Unwrap lets http.ResponseController reach the connection (to set
// deadlines).
func (a *answerWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// answers reports whether b is an event (or a JSON body) holding the
// response to the request id: a JSON-RPC message with that id and no
// method. The SDK writes each event with one Write.
func answers(b []byte, id any) bool {
	data := b
	if i := bytes.Index(b, []byte("data: ")); i >= 0 && (i == 0 || b[i-1] == '\n') {
		data = b[i+len("data: "):]
		if j := bytes.IndexByte(data, '\n'); j >= 0 {
			data = data[:j]
		}
	}
	var m struct {
		ID     json.RawMessage  `json:"id"`
		Method *json.RawMessage `json:"method"`
	}
	if json.Unmarshal(data, &m) != nil || m.Method != nil {
		return false
	}
	got, ok := decodedID(m.ID)
	return ok && got == id
}
