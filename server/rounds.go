package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// asker is where a call's requests to its client go: the session itself,
// which sends them while the call runs (MCP before 2026-07-28), or the
// call's round, which returns them as input requests (from 2026-07-28).
type asker interface {
	Elicit(context.Context, *sdk.ElicitParams) (*sdk.ElicitResult, error)
	CreateMessage(context.Context, *sdk.CreateMessageParams) (*sdk.CreateMessageResult, error)
}

// multiRound reports whether the client of ss speaks MCP 2026-07-28 or
// later, where a server may not send its client a request while serving
// one: it answers the call with input requests instead, and the client
// calls again with the answers (multi round trip).
func multiRound(ss *sdk.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= "2026-07-28"
}

// rounds holds the calls of multi-round-trip clients between their rounds.
// An upstream server's elicitation in the middle of its call cannot be
// answered by ending lathe's call (the upstream call would be lost), so
// lathe's call goes on running, waiting in the middle of its question,
// while the client's tools/call is answered with the question as an input
// request and a request state: a random name for the waiting call, which
// only the same session may use. The client's next tools/call, carrying
// that state and its answer, hands the answer to the waiting call and is
// answered with the call's next question or its result.
//
// A waiting call holds a goroutine, the call's own state and, for an
// upstream's question, the upstream call, with no request of its client
// open: nothing but the client's word says it will come back. So the
// waiting calls are bounded ([RoundOptions]): per client and overall, a
// call that would wait past a bound is cancelled and its client answered
// with an error that names the bound; and a call whose client has not come
// back within [RoundOptions].Wait is cancelled, as a call whose client
// went away is, its record complete.
type rounds struct {
	opts RoundOptions

	mu      sync.Mutex
	waiting map[string]*round
	// perClient counts the waiting calls of each client.
	perClient map[string]int
	ended     map[*sdk.ServerSession]chan struct{} // closed when the session ends
}

// RoundOptions bound the calls of clients of MCP 2026-07-28 that wait for
// their client's next round: a call that asked its client something
// (an approval, an upstream server's elicitation or sampling) and returned
// the question, which the client answers by calling again. The zero value
// is ready to use.
type RoundOptions struct {
	// Wait is how long a call waits for its client's next round; two
	// minutes when zero. A call whose own deadline comes sooner ends with
	// it. A call not taken up within Wait is cancelled.
	Wait time.Duration
	// MaxPerClient caps the calls of one client that wait at once, 64 when
	// zero; MaxWaiting those of all clients, 1024 when zero. A call that
	// would wait past either is cancelled, and its client's tools/call is
	// answered with a JSON-RPC error that names the bound.
	//
	// A client is its session; over streamable HTTP, where MCP 2026-07-28
	// has no session, it is the authenticated user when an authentication
	// layer names one, and otherwise the client's name as its requests
	// declare it (clientInfo), which one holder of the server's token may
	// vary: MaxWaiting is the bound that holds whatever a client declares.
	MaxPerClient, MaxWaiting int
}

func (o RoundOptions) withDefaults() RoundOptions {
	if o.Wait <= 0 {
		o.Wait = 2 * time.Minute
	}
	if o.MaxPerClient <= 0 {
		o.MaxPerClient = 64
	}
	if o.MaxWaiting <= 0 {
		o.MaxWaiting = 1024
	}
	return o
}

// codeTooManyRounds is the JSON-RPC error code of a tools/call whose call
// would wait for its client's next round past a bound of RoundOptions: one
// of the codes JSON-RPC leaves to servers, used by no other MCP error.
const codeTooManyRounds = -32050

// maxAnswerWait bounds the wait for a client's next round: a question of
// the engine's own (an approval, a tool's question) is asked between runs
// of the call, outside any deadline of a tool.
const maxAnswerWait = 10 * time.Minute

// sessionEnded returns a channel closed when ss ends; one watcher per
// session, not per call.
func (r *rounds) sessionEnded(ss *sdk.ServerSession) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ch, ok := r.ended[ss]; ok {
		return ch
	}
	if r.ended == nil {
		r.ended = map[*sdk.ServerSession]chan struct{}{}
	}
	ch := make(chan struct{})
	r.ended[ss] = ch
	go func() {
		ss.Wait()
		r.mu.Lock()
		delete(r.ended, ss)
		r.mu.Unlock()
		close(ch)
	}()
	return ch
}

// round is one call of a multi-round-trip client.
type round struct {
	ss     *sdk.ServerSession
	client string                   // whose count of waiting calls it is in (see RoundOptions)
	asks   chan *input              // the call's next question to its client
	done   chan *sdk.CallToolResult // the call's result
	stop   context.CancelFunc       // cancels the call
	// timer cancels the call when its client has not come back in time;
	// guarded by rounds.mu, set while the call waits.
	timer *time.Timer
	mu    sync.Mutex
	open  *input // the question the client was last given
	n     int
}

// input is one input request of a call and the channel its answer comes on.
type input struct {
	id     string
	req    sdk.InputRequest
	answer chan sdk.InputResponse
}

// serve answers one tools/call of a multi-round-trip client: a new call is
// started with run; a call that carries a request state resumes the call
// it names with the answers it brings. Either way the answer is the call's
// next question, or its result.
func (r *rounds) serve(ctx context.Context, ss *sdk.ServerSession, client string, req *sdk.CallToolRequest,
	run func(context.Context, asker) *sdk.CallToolResult) (*sdk.CallToolResult, error) {
	var rd *round
	if state := req.Params.RequestState; state != "" {
		if rd = r.take(state, ss); rd == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: "requestState names no call of this session that waits for an answer (it has ended, or was never)"}
		}
		rd.mu.Lock()
		in := rd.open
		rd.open = nil
		rd.mu.Unlock()
		if in != nil {
			// Buffered: the call takes it when it is ready.
			in.answer <- req.Params.InputResponses[in.id]
		}
	} else {
		// The call outlives this request, which ends with its first
		// question; it keeps the request's values (the session, the
		// progress token's request) and ends with its own deadline.
		callCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
		rd = &round{ss: ss, client: client, asks: make(chan *input), done: make(chan *sdk.CallToolResult, 1), stop: stop}
		// Closing the session cancels its calls, those between rounds too.
		ended := r.sessionEnded(ss)
		go func() {
			select {
			case <-ended:
				stop()
			case <-callCtx.Done():
			}
		}()
		go func() {
			res := run(callCtx, rd)
			stop()
			r.forget(rd)
			rd.done <- res
		}()
	}
	select {
	case res := <-rd.done:
		return res, nil
	case in := <-rd.asks:
		state, err := r.wait(rd, in)
		if err != nil {
			rd.stop()
			return nil, err
		}
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{in.id: in.req}, RequestState: state}, nil
	case <-ctx.Done():
		// The client cancelled its call.
		rd.stop()
		return nil, ctx.Err()
	}
}

// wait keeps rd under a new request state until the client answers in,
// within the bounds of RoundOptions.
func (r *rounds) wait(rd *round, in *input) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a request state: %w", err)
	}
	state := hex.EncodeToString(b[:])
	rd.mu.Lock()
	rd.open = in
	rd.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.perClient[rd.client] >= r.opts.MaxPerClient:
		return "", &jsonrpc.Error{Code: codeTooManyRounds, Message: fmt.Sprintf(
			"too many calls wait for this client's next round: a client has at most %d waiting (RoundOptions.MaxPerClient); "+
				"the call was cancelled: answer or abandon the others first", r.opts.MaxPerClient)}
	case len(r.waiting) >= r.opts.MaxWaiting:
		return "", &jsonrpc.Error{Code: codeTooManyRounds, Message: fmt.Sprintf(
			"too many calls wait for their client's next round: the server holds at most %d (RoundOptions.MaxWaiting); "+
				"the call was cancelled", r.opts.MaxWaiting)}
	}
	if r.waiting == nil {
		r.waiting = map[string]*round{}
		r.perClient = map[string]int{}
	}
	r.waiting[state] = rd
	r.perClient[rd.client]++
	// A client that does not come back in time has abandoned its call.
	rd.timer = time.AfterFunc(r.opts.Wait, func() {
		if r.release(state, rd) {
			rd.stop()
		}
	})
	return state, nil
}

// release removes rd from the waiting calls under state, and reports
// whether it was there. r.mu must not be held.
func (r *rounds) release(state string, rd *round) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.releaseLocked(state, rd)
}

func (r *rounds) releaseLocked(state string, rd *round) bool {
	if r.waiting[state] != rd {
		return false
	}
	delete(r.waiting, state)
	if r.perClient[rd.client]--; r.perClient[rd.client] <= 0 {
		delete(r.perClient, rd.client)
	}
	if rd.timer != nil {
		rd.timer.Stop()
		rd.timer = nil
	}
	return true
}

// take removes and returns the call waiting under state, if it belongs to
// the session ss: no other client may answer, or end, another's call.
func (r *rounds) take(state string, ss *sdk.ServerSession) *round {
	r.mu.Lock()
	defer r.mu.Unlock()
	rd := r.waiting[state]
	if rd == nil || rd.ss != ss {
		return nil
	}
	r.releaseLocked(state, rd)
	return rd
}

// forget removes a call that ended from the waiting ones.
func (r *rounds) forget(rd *round) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for state, w := range r.waiting {
		if w == rd {
			r.releaseLocked(state, rd)
		}
	}
}

// roundKey carries, in the context of a call of MCP 2026-07-28 over HTTP,
// the function that names the client it counts against (http26.go).
type roundKey struct{}

// roundClient names the client of a call for the bounds of RoundOptions:
// its session, or what serveCall26 finds for a call that has none.
func (s *Server) roundClient(ctx context.Context, ss *sdk.ServerSession) string {
	if c, ok := ctx.Value(roundKey{}).(func() string); ok {
		return c()
	}
	return s.sessionID(ss)
}

// ask puts req to the client as the call's next input request and waits
// for the answer, or for ctx to end.
func (rd *round) ask(ctx context.Context, req sdk.InputRequest) (sdk.InputResponse, error) {
	rd.mu.Lock()
	rd.n++
	in := &input{id: "lathe-" + strconv.Itoa(rd.n), req: req, answer: make(chan sdk.InputResponse, 1)}
	rd.mu.Unlock()
	select {
	case rd.asks <- in:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	t := time.NewTimer(maxAnswerWait)
	defer t.Stop()
	select {
	case a := <-in.answer:
		if a == nil {
			return nil, errors.New("the client called again without an answer to the input request " + in.id)
		}
		return a, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("the client did not answer: %w", ctx.Err())
	case <-t.C:
		return nil, fmt.Errorf("the client did not answer within %s", maxAnswerWait)
	}
}

func (rd *round) Elicit(ctx context.Context, p *sdk.ElicitParams) (*sdk.ElicitResult, error) {
	return elicited(rd.ask(ctx, p))
}

// elicited reads a client's answer to an elicitation, as a round or a
// task (taskinput.go) got it.
func elicited(a sdk.InputResponse, err error) (*sdk.ElicitResult, error) {
	if err != nil {
		return nil, err
	}
	res, ok := a.(*sdk.ElicitResult)
	if !ok {
		return nil, fmt.Errorf("the client answered an elicitation with %T", a)
	}
	return res, nil
}

func (rd *round) CreateMessage(ctx context.Context, p *sdk.CreateMessageParams) (*sdk.CreateMessageResult, error) {
	return sampled(rd.ask(ctx, p))
}

// sampled reads a client's answer to a sampling request, as a round or a
// task (taskinput.go) got it.
func sampled(a sdk.InputResponse, err error) (*sdk.CreateMessageResult, error) {
	if err != nil {
		return nil, err
	}
	switch res := a.(type) {
	case *sdk.CreateMessageResult:
		return res, nil
	case *sdk.CreateMessageWithToolsResult:
		// The SDK decodes an answer by its shape, and content as a list
		// is the shape of the answer with tools. The request had none, so
		// a single block is what the client meant.
		if len(res.Content) != 1 {
			return nil, fmt.Errorf("the client answered a sampling request with %d content blocks, want 1", len(res.Content))
		}
		return &sdk.CreateMessageResult{Meta: res.Meta, Content: res.Content[0], Model: res.Model, Role: res.Role,
			StopReason: res.StopReason}, nil
	default:
		return nil, fmt.Errorf("the client answered a sampling request with %T", a)
	}
}
