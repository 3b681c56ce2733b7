package temporal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/internal/statedir"
	"github.com/lathe-tools/lathe/tool"
)

// Options configure [Dial]. The zero value reaches a development server on
// this machine.
type Options struct {
	// Address is the server's frontend, host:port; empty means
	// [DefaultAddress].
	Address string
	// Namespace is the Temporal namespace; empty means [DefaultNamespace].
	Namespace string
	// CacheDir keeps the tools each queue's workers published, so that a
	// one-shot command lists them without a round trip; empty means
	// $LATHE_CACHE_DIR/temporal, else lathe/temporal in the user's cache
	// directory, and "-" keeps none.
	CacheDir string
	// Heartbeat is how long a worker may go silent during a call before it
	// is taken for dead; zero means [DefaultHeartbeat].
	Heartbeat time.Duration
	// ListTimeout bounds asking a queue for its tools; zero means
	// [DefaultListTimeout].
	ListTimeout time.Duration
	// Logger receives the SDK's log. Nil discards it.
	Logger *slog.Logger
}

// Client is a connection to a Temporal server, for callers (see
// [Client.Queue]) and workers ([Serve]) alike. It is safe for concurrent
// use.
type Client struct {
	c    client.Client
	opts Options

	mu     sync.Mutex
	queues map[string]*queueState
}

// queueState is what a client knows of one queue: the version of the
// registry its tools came from, and whom to tell when a worker answers
// from another.
type queueState struct {
	version string
	changed func()
}

// Dial connects to the Temporal server of opts. The connection is checked
// here, so that a wrong address fails now, with its cause.
func Dial(ctx context.Context, opts Options) (*Client, error) {
	if opts.Address == "" {
		opts.Address = DefaultAddress
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.ListTimeout <= 0 {
		opts.ListTimeout = DefaultListTimeout
	}
	if opts.CacheDir == "" {
		// The directory of lathe's other caches ($LATHE_CACHE_DIR, else
		// the user's cache directory), outside every workspace.
		if d := os.Getenv("LATHE_CACHE_DIR"); d != "" {
			opts.CacheDir = filepath.Join(d, "temporal")
		} else if d, err := os.UserCacheDir(); err == nil {
			opts.CacheDir = filepath.Join(d, "lathe", "temporal")
		}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c, err := client.DialContext(ctx, client.Options{
		HostPort:  opts.Address,
		Namespace: opts.Namespace,
		Logger:    tlog.NewStructuredLogger(logger),
	})
	if err != nil {
		return nil, fmt.Errorf("temporal server at %s: %w", opts.Address, err)
	}
	return &Client{c: c, opts: opts, queues: map[string]*queueState{}}, nil
}

// Close closes the connection.
func (c *Client) Close() error {
	c.c.Close()
	return nil
}

// Queue returns the tools the workers of queue serve, each with a runtime
// that sends its calls to them. With fresh false it answers from the cache
// of what the queue published last, where there is one; otherwise it asks
// one worker of the queue, within [Options].ListTimeout, and caches the
// answer. It calls changed, from a goroutine of its own, when a worker
// answers a call from another registry than the one returned.
func (c *Client) Queue(ctx context.Context, queue string, fresh bool, changed func()) ([]tool.Tool, error) {
	var l *listOutput
	if !fresh {
		l = c.readCache(queue)
	}
	if l == nil {
		var err error
		if l, err = c.list(ctx, queue); err != nil {
			return nil, err
		}
		c.writeCache(queue, l)
	}
	c.mu.Lock()
	c.queues[queue] = &queueState{version: l.Registry, changed: changed}
	c.mu.Unlock()
	rt := &Runtime{client: c, queue: queue}
	out := make([]tool.Tool, 0, len(l.Tools))
	for _, d := range l.Tools {
		// The source stays the worker's (mcp.NAME, local …), which the
		// caller's routes and policy match; the runtime is this one.
		d.Runtime = RuntimeName
		out = append(out, tool.Tool{Definition: d, Runtime: rt})
	}
	return out, nil
}

// list asks one worker of queue for its tools.
func (c *Client) list(ctx context.Context, queue string) (*listOutput, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ListTimeout)
	defer cancel()
	run, err := c.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       "lathe-list-" + queue + "-" + newID(),
		TaskQueue:                queue,
		WorkflowExecutionTimeout: c.opts.ListTimeout,
	}, listName, c.opts.ListTimeout)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the server did not take the request for the tools of queue %q within %s", queue, c.opts.ListTimeout)
		}
		return nil, fmt.Errorf("asking the workers of queue %q for their tools: %w", queue, err)
	}
	var l listOutput
	if err := run.Get(ctx, &l); err != nil {
		if ctx.Err() != nil || isTimeout(err) {
			return nil, fmt.Errorf("no worker of queue %q answered within %s (is lathe worker --queue %s running?)",
				queue, c.opts.ListTimeout, queue)
		}
		return nil, fmt.Errorf("asking the workers of queue %q for their tools: %w", queue, err)
	}
	return &l, nil
}

// cacheFile is where the tools of queue are cached: one file per server,
// namespace and queue.
func (c *Client) cacheFile(queue string) string {
	if c.opts.CacheDir == "" || c.opts.CacheDir == "-" {
		return ""
	}
	h := sha256.Sum256([]byte(c.opts.Address + "\x00" + c.opts.Namespace + "\x00" + queue))
	return filepath.Join(c.opts.CacheDir, hex.EncodeToString(h[:16])+".json")
}

// readCache reads the cached tools of queue, or returns nil. The cache
// decides which tools the caller offers, so it is kept as the trust
// records are: a directory or a file that others may write or that
// another user owns, a link or a FIFO, is not read, and the queue is
// asked instead.
func (c *Client) readCache(queue string) *listOutput {
	f := c.cacheFile(queue)
	if f == "" || statedir.CheckDir(filepath.Dir(f), "tool cache") != nil {
		return nil
	}
	r, fi, err := statedir.Open(f)
	if err != nil {
		return nil
	}
	defer r.Close()
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o022 != 0 {
		return nil
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil
	}
	var l listOutput
	if json.NewDecoder(io.LimitReader(r, maxCache)).Decode(&l) != nil || l.Registry == "" {
		return nil
	}
	return &l
}

// maxCache caps what is read of a cache file.
const maxCache = 64 << 20

// writeCache writes the cache whole or not at all, readable by this user
// only (see readCache). A cache that cannot be written costs only the
// next command a round trip.
func (c *Client) writeCache(queue string, l *listOutput) {
	f := c.cacheFile(queue)
	if f == "" || statedir.MkdirAll(filepath.Dir(f), "tool cache") != nil {
		return
	}
	if b, err := json.Marshal(l); err == nil {
		statedir.WriteFile(f, b)
	}
}

// seen compares the registry a worker answered from with the one the
// caller's tools came from, and reports a change once.
func (c *Client) seen(queue, version string) {
	if version == "" {
		return
	}
	c.mu.Lock()
	q := c.queues[queue]
	var changed func()
	if q != nil && q.version != version {
		q.version = version
		changed = q.changed
	}
	c.mu.Unlock()
	if changed != nil {
		go changed()
	}
}

// Runtime sends the calls of a queue's tools to its workers.
type Runtime struct {
	client *Client
	queue  string
}

var (
	_ tool.Runtime     = (*Runtime)(nil)
	_ tool.Cooperative = (*Runtime)(nil)
)

// Cooperative reports true: Execute returns as soon as its context ends,
// having asked the server to cancel the call.
func (r *Runtime) Cooperative() bool { return true }

// Execute runs call on a worker of the queue and returns its outcome,
// whole: a result, or a question the tool asks, which the caller answers
// by calling again with the same ID and the answers.
func (r *Runtime) Execute(ctx context.Context, def *tool.Definition, call *tool.Call) (*tool.Outcome, error) {
	c := r.client
	timeout := lathe.DefaultTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	if timeout <= 0 {
		return nil, context.DeadlineExceeded
	}
	in := callInput{Call: *call, Session: lathe.SessionFrom(ctx)}
	if in.Call.ID == "" {
		in.Call.ID = newID()
	}
	plan := callPlan{Timeout: timeout, Heartbeat: min(c.opts.Heartbeat, timeout), Retry: mayRetry(def.Annotations)}
	run, err := c.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		// The same call ID comes again with answers; each run is a
		// workflow of its own, whose one activity has the call's ID.
		ID:        "lathe-call-" + in.Call.ID + "-" + newID(),
		TaskQueue: r.queue,
		// A margin past the activity's own timeout, so that the
		// activity's timeout, which says more, is the one that fires.
		WorkflowExecutionTimeout: timeout + 5*time.Second,
	}, callName, in, plan)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Message: fmt.Sprintf("sending the call to queue %q", r.queue), Err: err}
	}
	stopProgress := r.watchProgress(ctx, run)
	var out callOutput
	err = run.Get(ctx, &out)
	stopProgress()
	if ctx.Err() != nil {
		// The caller gave up: the call is cancelled on the worker too,
		// whose heartbeat brings the cancellation to the tool.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		c.c.CancelWorkflow(cctx, run.GetID(), run.GetRunID())
		cancel()
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, r.failure(def, err)
	}
	c.seen(r.queue, out.Registry)
	o := out.Outcome
	if o.Result == nil && o.Question == nil {
		return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Message: fmt.Sprintf("a worker of queue %q answered with no outcome", r.queue)}
	}
	return &o, nil
}

// mayRetry says whether a call whose machinery failed may be run again:
// not for a tool that may destroy, unless it says it is idempotent. A
// tool that says nothing may destroy (MCP's cautious default).
func mayRetry(a tool.Annotations) bool {
	if a.ReadOnlyHint || a.IdempotentHint {
		return true
	}
	return a.DestructiveHint != nil && !*a.DestructiveHint
}

// failure explains why a call that went to a worker has no outcome.
func (r *Runtime) failure(def *tool.Definition, err error) error {
	var te *temporal.TimeoutError
	if errors.As(err, &te) {
		switch te.TimeoutType() {
		case enumspb.TIMEOUT_TYPE_HEARTBEAT:
			msg := fmt.Sprintf("the worker of queue %q running the call stopped answering", r.queue)
			if !mayRetry(def.Annotations) {
				msg += "; the tool may destroy and is not marked idempotent, so the call was not run again: it may or may not have taken effect"
			}
			return &tool.Error{Kind: tool.KindRuntimeFailure, Message: msg, Err: err}
		case enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START:
			return &tool.Error{Kind: tool.KindRuntimeFailure, Message: fmt.Sprintf("no worker of queue %q took the call", r.queue), Err: err}
		case enumspb.TIMEOUT_TYPE_START_TO_CLOSE, enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE:
			return &tool.Error{Kind: tool.KindTimeout, Message: fmt.Sprintf("the call did not finish in time on queue %q", r.queue), Err: err}
		}
	}
	if isTimeout(err) {
		return &tool.Error{Kind: tool.KindRuntimeFailure, Message: fmt.Sprintf("no worker of queue %q finished the call in time", r.queue), Err: err}
	}
	if temporal.IsCanceledError(err) {
		return &tool.Error{Kind: tool.KindCancelled, Message: "the call was cancelled", Err: err}
	}
	return &tool.Error{Kind: tool.KindRuntimeFailure, Message: fmt.Sprintf("the call on queue %q failed", r.queue), Err: err}
}

func isTimeout(err error) bool {
	var te *temporal.TimeoutError
	return errors.As(err, &te) || errors.Is(err, context.DeadlineExceeded)
}

// progressEvery is how often a caller that wants progress reads the
// running call's last heartbeat.
const progressEvery = 250 * time.Millisecond

// watchProgress passes the progress of the running call, as its worker's
// heartbeats carry it, to the progress hook of ctx, if it has one. The
// returned function stops it.
func (r *Runtime) watchProgress(ctx context.Context, run client.WorkflowRun) func() {
	report := tool.HooksFrom(ctx).Progress
	if report == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		var last tool.Progress
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			d, err := r.client.c.DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID())
			if err != nil {
				continue
			}
			for _, a := range d.GetPendingActivities() {
				if a.GetHeartbeatDetails() == nil {
					continue
				}
				var p tool.Progress
				if converter.GetDefaultDataConverter().FromPayloads(a.GetHeartbeatDetails(), &p) != nil {
					continue
				}
				if p != last && p.Progress >= last.Progress {
					last = p
					report(p)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}
