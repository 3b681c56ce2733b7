package mcp

import (
	"bytes"
	"context"
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/internal/linelog"
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
	w := &trafficLog{log: l, server: s.cfg.Name}
	return &sdk.LoggingTransport{Transport: t, Writer: linelog.New(0, w.record)}
}

// trafficLog turns the lines the SDK's logging transport writes ("read: …",
// "write: …") into log records naming the server and the direction.
type trafficLog struct {
	log    *slog.Logger
	server string
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
