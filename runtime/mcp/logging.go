package mcp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/tool"
)

// Logging. A server's log level is one for all of lathe's clients, since
// lathe holds one session with it: the pool sends it the most verbose of
// the levels its clients asked for ([Pool.SetLogLevel]) and of its
// configured [Config].LogLevel, and each client's own level filters what
// reaches that client. With neither, lathe leaves the server's level as
// the server set it.
//
// Losing no message. The SDK hands a call's result back as soon as the
// response is read, while the notifications read before it wait in a
// queue for their handler: a log message sent just before the result
// would otherwise find its call gone, and miss its client. So a call, once
// answered, waits (up to settleTimeout) until the log and progress
// notifications read before its answer are handled. They are counted as
// they are read: off a stdio connection (captureConn), or off the event
// streams of a server over HTTP (countBody), since the SDK's HTTP
// connection cannot be wrapped without losing what it tells the session. A message that
// belongs to no call — the server sent it while none of its calls ran —
// reaches the pool's watchers as [NoticeLog]; one sent while calls are in
// flight that none of them claims stays in lathe's own log, since it may
// concern another client's call.

// LogLevels returns the MCP log levels, from the most verbose.
func LogLevels() []string { return slices.Clone(logLevels) }

var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// ValidLogLevel reports whether level is an MCP log level.
func ValidLogLevel(level string) bool { return slices.Contains(logLevels, level) }

// settleTimeout bounds the wait of a call for the notifications read
// before its answer while none of them is handled: one the SDK drops as
// malformed never is. As long as they are being handled the call waits on:
// a server that sends a thousand messages before its answer, read faster
// than lathe passes them on, must not have the tail of them cut off.
const settleTimeout = 250 * time.Millisecond

// order counts the log and progress notifications a session read and
// those handled, so that a call can wait for those read before its answer.
type order struct {
	mu      sync.Mutex
	read    uint64
	handled uint64
	wake    chan struct{} // closed and replaced whenever handled grows
}

// noteRead counts m if it is a notification whose handler a call waits for.
func (o *order) noteRead(m jsonrpc.Message) {
	r, ok := m.(*jsonrpc.Request)
	if !ok || r.IsCall() || (r.Method != "notifications/message" && r.Method != "notifications/progress") {
		return
	}
	o.mu.Lock()
	o.read++
	o.mu.Unlock()
}

func (o *order) noteHandled() {
	o.mu.Lock()
	o.handled++
	if o.wake != nil {
		close(o.wake)
		o.wake = nil
	}
	o.mu.Unlock()
}

// settle waits until the notifications read so far are handled, or until
// none has been handled for settleTimeout, or until ctx ends.
func (o *order) settle(ctx context.Context) {
	o.mu.Lock()
	target := o.read
	o.mu.Unlock()
	var timer *time.Timer
	for {
		o.mu.Lock()
		if o.handled >= target {
			o.mu.Unlock()
			break
		}
		if o.wake == nil {
			o.wake = make(chan struct{})
		}
		wake := o.wake
		o.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(settleTimeout)
		}
		select {
		case <-wake:
			// Progress: the bound starts again.
			timer.Reset(settleTimeout)
		case <-timer.C:
			// What was not handled by now never will be (the SDK dropped
			// it as malformed): the count starts again from here, so that
			// later calls do not wait for it too.
			o.mu.Lock()
			o.handled = max(o.handled, target)
			o.mu.Unlock()
			return
		case <-ctx.Done():
			timer.Stop()
			return
		}
	}
	if timer != nil {
		timer.Stop()
	}
}

// handledFor counts a notification handled on cs, if cs is the server's
// live session.
func (s *server) handledFor(cs *sdk.ClientSession) {
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess != nil && sess.cs == cs && sess.cap != nil {
		sess.cap.order.noteHandled()
	}
}

// settle waits for the notifications sess read before a call's answer.
func (sess *session) settle(ctx context.Context) {
	if sess.cap != nil {
		sess.cap.order.settle(ctx)
	}
}

// background hands a log message that belongs to no call to the watchers,
// when the server has no call in flight. With calls in flight, a message
// that none of them claimed may still be about one of them, perhaps of
// another client: it stays in lathe's own log rather than reach every
// client. So may one that comes just after a call ended (see
// lingerAnswered): it goes to that call's session alone, and when calls
// of several sessions ended lately, to lathe's log only.
func (s *server) background(p *sdk.LoggingMessageParams) {
	s.mu.Lock()
	busy := len(s.inflight) > 0
	s.pruneEndedLocked(time.Now())
	sid, ended := lingering(&s.answered, &s.abandoned)
	s.mu.Unlock()
	if busy || ended > 1 {
		return
	}
	n := Notice{Kind: NoticeLog, Server: s.cfg.Name, Log: p}
	if ended == 1 {
		n.Session = sid
	}
	s.pool.notify(n)
}

// SetLogLevel records the level a client (named by who, a session) asks
// for and sends each server that takes logging/setLevel the level it
// should now have; an empty level forgets the client's. Servers that
// fail are reported in the error; the others have their level.
func (p *Pool) SetLogLevel(ctx context.Context, who string, level string) error {
	if level != "" && !ValidLogLevel(level) {
		return fmt.Errorf("unknown log level %q (one of %v)", level, logLevels)
	}
	p.surf.mu.Lock()
	if p.surf.levels == nil {
		p.surf.levels = map[string]sdk.LoggingLevel{}
	}
	if level == "" {
		delete(p.surf.levels, who)
	} else {
		p.surf.levels[who] = sdk.LoggingLevel(level)
	}
	p.surf.mu.Unlock()
	var errs []error
	for _, s := range p.servers {
		s.mu.Lock()
		sess := s.sess
		s.mu.Unlock()
		if sess == nil || sess.cs == nil {
			continue // a server not running gets its level when it starts
		}
		if err := s.applyLogLevel(ctx, sess.cs); err != nil {
			errs = append(errs, fmt.Errorf("mcp server %s: logging/setLevel: %w", s.cfg.Name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%v", errs)
	}
	return nil
}

// logLevel is the level the server should have: the most verbose of its
// configured one and those of the clients; "" when none is set.
func (s *server) logLevel() sdk.LoggingLevel {
	best := -1
	if i := slices.Index(logLevels, s.cfg.LogLevel); i >= 0 {
		best = i
	}
	p := s.pool
	p.surf.mu.Lock()
	for _, l := range p.surf.levels {
		if i := slices.Index(logLevels, string(l)); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	for l := range p.surf.held[s] {
		if i := slices.Index(logLevels, string(l)); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	p.surf.mu.Unlock()
	if best < 0 {
		return ""
	}
	return sdk.LoggingLevel(logLevels[best])
}

// applyLogLevel sends cs the level the server should have, if the server
// takes logging/setLevel and was not sent that level already.
func (s *server) applyLogLevel(ctx context.Context, cs *sdk.ClientSession) error {
	level := s.logLevel()
	if level == "" {
		return nil
	}
	if ir := cs.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Logging == nil {
		return nil
	}
	p := s.pool
	p.surf.mu.Lock()
	if p.surf.sent == nil {
		p.surf.sent = map[*sdk.ClientSession]sdk.LoggingLevel{}
	}
	if p.surf.sent[cs] == level {
		p.surf.mu.Unlock()
		return nil
	}
	p.surf.sent[cs] = level
	p.surf.mu.Unlock()
	if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: level}); err != nil {
		p.surf.mu.Lock()
		delete(p.surf.sent, cs)
		p.surf.mu.Unlock()
		return err
	}
	return nil
}

// holdLevel makes the level of a server before [metaLevelFrom] at least
// as verbose as level, the one a call's caller names ([tool.Hooks]), while
// the call runs. Such a server has one level for its session, which a
// request cannot name: without this, a client that names its level per
// request (MCP 2026-07-28) would get nothing of the server during its call
// unless some other client, or the configuration, had asked for as much.
// The messages of other calls that the raised level lets through reach
// their own clients, each filtering them by its own level. It returns the
// function that ends the hold. The level is not lowered when the hold
// ends, which would cost a round trip after every call, but the next time
// the server's level is set (another call's level, a client's
// logging/setLevel): until then the server may send more than is asked
// for, which its clients' levels filter.
func (s *server) holdLevel(ctx context.Context, sess *session, level string) func() {
	if !ValidLogLevel(level) || sess == nil || sess.cs == nil {
		return func() {}
	}
	ir := sess.cs.InitializeResult()
	if ir == nil || ir.ProtocolVersion >= metaLevelFrom || ir.Capabilities == nil || ir.Capabilities.Logging == nil {
		return func() {}
	}
	p, l := s.pool, sdk.LoggingLevel(level)
	p.surf.mu.Lock()
	if p.surf.held == nil {
		p.surf.held = map[*server]map[sdk.LoggingLevel]int{}
	}
	if p.surf.held[s] == nil {
		p.surf.held[s] = map[sdk.LoggingLevel]int{}
	}
	p.surf.held[s][l]++
	p.surf.mu.Unlock()
	if err := s.applyLogLevel(ctx, sess.cs); err != nil && ctx.Err() == nil {
		p.opts.Logger.Debug("log level of a call not set", "server", s.cfg.Name, "level", level, "error", err)
	}
	return func() {
		p.surf.mu.Lock()
		defer p.surf.mu.Unlock()
		if h := p.surf.held[s]; h != nil {
			if h[l]--; h[l] <= 0 {
				delete(h, l)
			}
			if len(h) == 0 {
				delete(p.surf.held, s)
			}
		}
	}
}

// forgetSession drops what the pool noted of a session that ended.
func (s *server) forgetSession(cs *sdk.ClientSession) {
	p := s.pool
	p.surf.mu.Lock()
	delete(p.surf.sent, cs)
	p.surf.mu.Unlock()
}

// metaLevelFrom is the first protocol version in which a server takes the
// log level from each request's _meta rather than from logging/setLevel,
// and sends no log message for a request that does not carry one.
const metaLevelFrom = "2026-07-28"

// levelInMeta is a sending middleware of the server's client: under
// protocol versions from [metaLevelFrom] on, it puts into each request's
// _meta the level of the call it is sent for, when the call's caller names
// one ([tool.Hooks].LogLevel: a client of lathe's of 2026-07-28 names it in
// its own request), and else the level the server should have. The
// messages a request's _meta asks for are those of that request, which
// reach that call's caller alone: the levels of other clients, and the
// configured one, have nothing to add to them.
func (s *server) levelInMeta(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		cs, ok := req.GetSession().(*sdk.ClientSession)
		params := req.GetParams()
		if !ok || params == nil || method == "initialize" || strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		if ir := cs.InitializeResult(); ir == nil || ir.ProtocolVersion < metaLevelFrom {
			return next(ctx, method, req)
		}
		level := s.logLevel()
		if l := tool.HooksFrom(ctx).LogLevel; ValidLogLevel(l) {
			level = sdk.LoggingLevel(l)
		}
		if level != "" {
			meta := maps.Clone(params.GetMeta())
			if meta == nil {
				meta = map[string]any{}
			}
			meta[sdk.MetaKeyLogLevel] = string(level)
			params.SetMeta(meta)
		}
		return next(ctx, method, req)
	}
}

// countBody passes on an event stream from a server over streamable HTTP
// as it is, and counts the log and progress notifications of its data
// lines, as a stdio connection counts those it reads. Only a data line
// whose head names a method is kept to its end, up to maxCountLine, and
// decoded: a result, however large, is looked at for its first headLen
// bytes only. The SDKs write a message's method before its params, so
// that a notification names its method in its head.
type countBody struct {
	io.ReadCloser
	order   *order
	line    []byte
	skip    bool // the current line is no data line, no message with a method, or too long
	checked bool // the head of the current line was looked at
}

const (
	maxCountLine = 1 << 20
	headLen      = 256
)

var (
	dataPrefix = []byte("data:")
	methodKey  = []byte(`"method"`)
)

func (b *countBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.scan(p[:n])
	return n, err
}

func (b *countBody) scan(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		b.take(part)
		if i < 0 {
			return
		}
		if !b.skip {
			b.count(b.line)
		}
		b.line, b.skip, b.checked = b.line[:0], false, false
		p = p[i+1:]
	}
}

// take keeps part of the current line, as far as the line needs keeping:
// its head until that is looked at, then the rest if the head names a
// method.
func (b *countBody) take(part []byte) {
	for len(part) > 0 && !b.skip {
		limit := maxCountLine + 1
		if !b.checked {
			limit = headLen
		}
		n := min(len(part), limit-len(b.line))
		b.line = append(b.line, part[:n]...)
		part = part[n:]
		k := min(len(b.line), len(dataPrefix))
		switch {
		case !bytes.Equal(b.line[:k], dataPrefix[:k]) || len(b.line) > maxCountLine:
			b.skip = true
		case !b.checked && len(b.line) >= headLen:
			b.checked = true
			b.skip = !bytes.Contains(b.line, methodKey)
		}
	}
}

// count notes the message of one data line, if it may be a notification.
func (b *countBody) count(line []byte) {
	data := bytes.TrimSpace(bytes.TrimPrefix(line, dataPrefix))
	if !bytes.Contains(data, []byte("notifications/")) {
		return
	}
	if m, err := jsonrpc.DecodeMessage(data); err == nil {
		b.order.noteRead(m)
	}
}
