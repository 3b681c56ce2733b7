package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/lathe-tools/lathe/host/scope"
	"github.com/lathe-tools/lathe/tool"
)

// Kinds of the other operations, as the policy and the audit log name them.
const (
	KindFetch    = "fetch"
	KindRun      = "run"
	KindEnv      = "env"
	KindLog      = "log"
	KindProgress = "progress"
	KindAsk      = "ask"
)

func (s *Session) env(ctx context.Context, p EnvParams) (any, *Error) {
	o := s.begin(KindEnv, p.Name)
	if err := scope.CheckEnv(p.Name); err != nil {
		o.approval, o.by = "deny", "host"
		return nil, s.finish(ctx, o, invalid("env/get: %v", err))
	}
	if !s.h.perms.env[p.Name] {
		return nil, s.deny(ctx, o, "permissions", s.h.outside(fmt.Sprintf("the variable %s", p.Name), p.Name, "env"))
	}
	if e := s.decide(ctx, o); e != nil {
		return nil, e
	}
	// The value is the tool's to read, and never the audit log's: the
	// operation records the name only.
	v, ok := os.LookupEnv(p.Name)
	s.finish(ctx, o, nil)
	return EnvResult{Value: v, Set: ok}, nil
}

// levels are MCP's log levels.
var levels = map[string]bool{"debug": true, "info": true, "notice": true, "warning": true,
	"error": true, "critical": true, "alert": true, "emergency": true}

func (s *Session) log(ctx context.Context, p LogParams) (any, *Error) {
	if p.Level == "" {
		p.Level = "info"
	}
	o := s.begin(KindLog, p.Level)
	o.approval, o.by = "allow", "host"
	if !levels[p.Level] {
		return nil, s.finish(ctx, o, invalid("log: level %q is not one of debug, info, notice, warning, error, critical, alert, emergency", p.Level))
	}
	msg := cut(p.Message, s.h.cfg.Limits.Message)
	o.bytes = int64(len(msg))
	if h := tool.HooksFrom(ctx); h.Log != nil {
		data, _ := json.Marshal(msg)
		h.Log(tool.LogMessage{Level: p.Level, Logger: s.h.cfg.Tool, Data: data})
	}
	s.finish(ctx, o, nil)
	return struct{}{}, nil
}

func (s *Session) progress(ctx context.Context, p ProgressParams) (any, *Error) {
	o := s.begin(KindProgress, cut(p.Message, 200))
	o.approval, o.by = "allow", "host"
	tool.ReportProgress(ctx, tool.Progress{Progress: p.Progress, Total: p.Total, Message: cut(p.Message, s.h.cfg.Limits.Message)})
	s.finish(ctx, o, nil)
	return struct{}{}, nil
}

func (s *Session) ask(ctx context.Context, p AskParams) (any, *Error) {
	o := s.begin(KindAsk, cut(p.Message, 200))
	o.approval, o.by = "allow", "host"
	if strings.TrimSpace(p.Message) == "" {
		return nil, s.finish(ctx, o, invalid("ask: the message is empty; say what the person is asked"))
	}
	if len(p.Message) > s.h.cfg.Limits.Message || len(p.Schema) > s.h.cfg.Limits.Message {
		return nil, s.finish(ctx, o, tooLarge("ask: the question is over the host's limit of %d bytes", s.h.cfg.Limits.Message))
	}
	h := tool.HooksFrom(ctx)
	if h.Elicit == nil {
		return nil, s.finish(ctx, o, failed("ask: no person can be asked in this call (its caller offers no elicitation)"))
	}
	res, err := h.Elicit(ctx, &tool.ElicitRequest{Message: p.Message, Schema: p.Schema})
	if err != nil {
		return nil, s.finish(ctx, o, failed("ask: %v", err))
	}
	if res == nil {
		res = &tool.ElicitResult{Action: tool.ElicitCancel}
	}
	s.finish(ctx, o, nil)
	return AskResult{Action: res.Action, Content: res.Content}, nil
}

// cut cuts s to at most n bytes, at a character's boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
