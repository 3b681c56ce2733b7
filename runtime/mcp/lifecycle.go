package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/lathe-tools/lathe/tool"
)

// adopt takes the tools a server listed when it started. When its tools
// were registered before (from the cache, or by an earlier session) and
// the list differs, they are replaced in the engine before the session is
// used, and calls that were checked against the old definitions learn of
// it (see stale). The list goes to the cache when it is new or changed.
func (s *server) adopt(tools []upTool) {
	s.mu.Lock()
	registered := s.started || s.fromCache
	changed := !sameTools(s.tools, tools)
	cached := s.fromCache
	s.tools = tools
	s.fromCache = false
	s.mu.Unlock()
	if changed && registered {
		s.pool.refreshed(s, tools)
		s.gen.Add(1)
	}
	if changed || !cached {
		s.remember(tools)
	}
}

// remember writes the server's tools to the pool's cache, if it has one.
func (s *server) remember(tools []upTool) {
	c := s.pool.opts.Cache
	if c == nil {
		return
	}
	if err := c.store(s, tools); err != nil {
		s.pool.opts.Logger.Debug("caching the MCP tool list failed", "server", s.cfg.Name, "error", err)
	}
}

// stale refuses a call whose tool changed since the call was resolved, as
// happens when the call starts a server whose tools came from the cache
// and the server lists another definition: the call was validated and
// let through the policy against what the cache said, and must not run
// against something else. gen is the server's generation when the call
// began.
func (s *server) stale(gen uint64, def *tool.Definition) error {
	if s.gen.Load() == gen {
		return nil
	}
	cur, ok := s.pool.reg.Lookup(def.Name)
	if ok && sameDefinition(&cur, def) {
		return nil
	}
	msg := "MCP server " + s.cfg.Name + " changed this tool when it started, after the call was checked against its cached definition; the call was not run: list the tools and call again"
	if !ok {
		msg = "MCP server " + s.cfg.Name + " no longer offers this tool now that it runs; the call was not run"
	}
	return &tool.Error{Kind: tool.KindRuntimeFailure, Tool: def.Name, Runtime: RuntimeName, Stage: "execute", Message: msg}
}

func sameDefinition(a, b *tool.Definition) bool {
	ja, erra := json.Marshal(a)
	jb, errb := json.Marshal(b)
	return erra == nil && errb == nil && bytes.Equal(ja, jb)
}

// ping checks, every PingInterval while no call is in flight, that the
// session still answers. A server that does not answer in time is taken
// for hung: its session is dropped, which stops its process, and it is
// started again at once, so that the next call finds it running.
func (s *server) ping(sess *session) {
	defer s.wg.Done()
	every := s.cfg.PingInterval
	wait := min(every, MaxPingWait)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-sess.done:
			return
		case <-s.ctx.Done():
			return
		}
		if s.busy() {
			continue
		}
		ctx, cancel := context.WithTimeout(s.ctx, wait)
		err := sess.cs.Ping(ctx, nil)
		cancel()
		if err == nil || s.ctx.Err() != nil {
			continue
		}
		s.pool.opts.Logger.Warn("MCP server did not answer a ping; starting it again", "server", s.cfg.Name, "error", err)
		s.drop(sess)
		s.startInBackground()
		return
	}
}

// busy reports whether a call of the server is in flight: its answer
// shows the server alive, and a ping would only queue behind it.
func (s *server) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inflight) > 0
}

func (s *server) currentFromCache() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fromCache
}

// startInBackground starts the server without a caller waiting; a failure
// is logged, and the next call tries again.
func (s *server) startInBackground() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if _, err := s.session(s.ctx); err != nil && s.ctx.Err() == nil {
			s.pool.opts.Logger.Warn("starting MCP server failed; the next call tries again", "server", s.cfg.Name, "error", err)
		}
	}()
}
