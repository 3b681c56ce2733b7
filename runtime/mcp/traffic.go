package mcp

import (
	"bytes"
	"context"
	"log/slog"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxTrafficLine bounds one logged message: a tool's result can be
// megabytes, and the log is for a person reading a terminal.
const maxTrafficLine = 4 << 10

// withTraffic wraps t so that every JSON-RPC message to and from the server
// is logged at debug level, when the pool's logger records that level; else
// it returns t, and the messages cost nothing more.
func (s *server) withTraffic(ctx context.Context, t sdk.Transport) sdk.Transport {
	l := s.pool.opts.Logger
	if !l.Enabled(ctx, slog.LevelDebug) {
		return t
	}
	return &sdk.LoggingTransport{Transport: t, Writer: &trafficLog{log: l, server: s.cfg.Name}}
}

// trafficLog turns the lines the SDK's logging transport writes ("read: …",
// "write: …") into log records naming the server and the direction.
type trafficLog struct {
	log    *slog.Logger
	server string

	mu  sync.Mutex
	buf []byte
}

func (w *trafficLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.record(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *trafficLog) record(line []byte) {
	dir := "message"
	switch {
	case bytes.HasPrefix(line, []byte("read: ")):
		dir, line = "from server", line[len("read: "):]
	case bytes.HasPrefix(line, []byte("write: ")):
		dir, line = "to server", line[len("write: "):]
	}
	attrs := []any{"server", w.server, "direction", dir}
	if len(line) > maxTrafficLine {
		attrs = append(attrs, "bytes", len(line))
		line = append(line[:maxTrafficLine:maxTrafficLine], "…"...)
	}
	w.log.Debug("MCP traffic", append(attrs, "message", string(line))...)
}
