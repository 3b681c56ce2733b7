package server

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// Answers in a batch (MCP 2025-03-26).
//
// MCP 2025-03-26 lets a client POST a JSON-RPC batch: an array of
// messages, responses among them. The requests lathe's own path sends a
// client (httpcall.go: an upstream server's sampling, say) are not the
// SDK's, which would drop an answer to them; serveCalls takes such an
// answer when it comes alone, and batchAnswers takes it out of a batch.
// The batch's other messages go on to the SDK as the batch they were (an
// array still, so that its requests are answered as a batch); a batch of
// nothing else is accepted as a lone answer is (202). Later versions have
// no batches, and the SDK refuses them; they are passed on untouched.
func (s *Server) batchAnswers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Mcp-Session-Id")
		body, held := heldBytes(r)
		if r.Method != http.MethodPost || id == "" || !held || len(body) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '[' {
			next.ServeHTTP(w, r)
			return
		}
		ws := s.web(id)
		if ws == nil || !plainPOST(r) {
			next.ServeHTTP(w, r)
			return
		}
		if ip := ws.ss.InitializeParams(); ip == nil || ip.ProtocolVersion >= "2025-06-18" {
			next.ServeHTTP(w, r)
			return
		}
		var batch []json.RawMessage
		if json.Unmarshal(body, &batch) != nil || len(batch) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		rest := batch[:0:0]
		for _, raw := range batch {
			if !ws.takes(raw) {
				rest = append(rest, raw)
			}
		}
		switch {
		case len(rest) == len(batch):
			next.ServeHTTP(w, r)
		case len(rest) == 0:
			w.WriteHeader(http.StatusAccepted)
		default:
			b, err := json.Marshal(rest)
			if err != nil {
				next.ServeHTTP(w, r)
				return
			}
			r.Body, r.ContentLength = &heldBody{Reader: bytes.NewReader(b), b: b}, int64(len(b))
			next.ServeHTTP(w, r)
		}
	})
}

// takes hands one message of a batch to lathe's own path when it is an
// answer to one of its requests, or a cancellation of one of its calls,
// and reports whether it did.
func (w *webSession) takes(raw json.RawMessage) bool {
	var m message
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	if v, _ := m.str("jsonrpc"); v != "2.0" {
		return false
	}
	method, named := m.str("method")
	if _, has := m["method"]; !has {
		return w.answered(m)
	}
	return named && method == "notifications/cancelled" && w.cancelled(m)
}
