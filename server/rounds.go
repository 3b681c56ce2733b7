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
// A client that never comes back costs the call's deadline: the waiting
// call's question ends with it, as a question to a client that does not
// answer does, and the call ends as the engine ends it.
type rounds struct {
	mu      sync.Mutex
	waiting map[string]*round
	ended   map[*sdk.ServerSession]chan struct{} // closed when the session ends
}

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
	ss   *sdk.ServerSession
	asks chan *input              // the call's next question to its client
	done chan *sdk.CallToolResult // the call's result
	stop context.CancelFunc       // cancels the call
	mu   sync.Mutex
	open *input // the question the client was last given
	n    int
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
func (r *rounds) serve(ctx context.Context, ss *sdk.ServerSession, req *sdk.CallToolRequest,
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
		rd = &round{ss: ss, asks: make(chan *input), done: make(chan *sdk.CallToolResult, 1), stop: stop}
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

// wait keeps rd under a new request state until the client answers in.
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
	if r.waiting == nil {
		r.waiting = map[string]*round{}
	}
	r.waiting[state] = rd
	return state, nil
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
	delete(r.waiting, state)
	return rd
}

// forget removes a call that ended from the waiting ones.
func (r *rounds) forget(rd *round) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for state, w := range r.waiting {
		if w == rd {
			delete(r.waiting, state)
		}
	}
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
