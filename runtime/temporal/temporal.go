// Package temporal runs tool calls on workers elsewhere, through a Temporal
// server: durable, routed by task queue, with heartbeats, cancellation and
// retries, and no queue of lathe's own.
//
// A worker ([Serve], what lathe worker --queue NAME runs) serves the tools
// of its own engine, which it opened from its own configuration, on one
// task queue: every call it takes goes through that engine's whole
// pipeline (validation, policy, sandbox, audit). Many workers on many
// machines may serve one queue; Temporal gives each call to one of them.
//
// A caller ([Dial], then [Client.Queue]) registers the tools a queue's
// workers publish, each with a runtime that sends its calls there. One call
// is one workflow that runs one activity: the activity's ID is the call's
// ID, which the tool gets as its idempotency key; its start-to-close
// timeout is what is left of the call's deadline. The activity's heartbeats
// carry the call's progress to the caller and bring a cancellation to the
// tool. An activity is retried only when its machinery failed (the worker
// died, the server lost it), never for a result the tool returned, and a
// tool that may destroy is retried only when it says it is idempotent.
//
// [Client] is what package load calls a Dispatcher
// ([github.com/lathe-tools/lathe/load.Dispatcher]), which the lathe command
// gives the loader through [github.com/lathe-tools/lathe/load.Options].Dispatch.
// A program that does not import this package does not compile the
// Temporal SDK. See docs/temporal.md of the project for the design and its
// reasons.
package temporal

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/lathe-tools/lathe/tool"
)

// Defaults, where [Options] leaves a field zero.
const (
	DefaultAddress   = "localhost:7233"
	DefaultNamespace = "default"
	// DefaultHeartbeat is how long a worker may go silent while it runs a
	// call before the server takes it for dead and, where the tool may be
	// run again, gives the call to another worker.
	DefaultHeartbeat = 3 * time.Second
	// DefaultListTimeout bounds asking a queue for its tools: a queue no
	// worker serves does not hold up the caller's start for long.
	DefaultListTimeout = 10 * time.Second
)

// The names of the workflows and activities on the wire. Callers and
// workers of different builds meet on them, so they are versioned.
const (
	callName = "lathe.call.v1"
	listName = "lathe.list.v1"
)

// RuntimeName is the [tool.Definition].Runtime of a tool whose calls go
// to a queue.
const RuntimeName = "temporal"

// callInput is one call as a worker receives it.
type callInput struct {
	Call tool.Call `json:"call"`
	// Session is the caller's session, for the worker's audit log.
	Session string `json:"session,omitempty"`
}

// callPlan is how the workflow runs the call's activity: the caller
// decides it, from the call's deadline and the tool's effects.
type callPlan struct {
	Timeout   time.Duration `json:"timeout"`
	Heartbeat time.Duration `json:"heartbeat"`
	// Retry says whether an attempt whose machinery failed may be made
	// again.
	Retry bool `json:"retry"`
}

// callOutput is a call's outcome as a worker sends it back, with the
// version of the worker's registry, by which the caller learns that the
// worker's tools changed.
type callOutput struct {
	Outcome  tool.Outcome `json:"outcome"`
	Registry string       `json:"registry"`
}

// listOutput is what a worker publishes of its tools.
type listOutput struct {
	Registry string            `json:"registry"`
	Tools    []tool.Definition `json:"tools"`
}

// registryVersion is the version of a list of definitions: their hash.
func registryVersion(defs []tool.Definition) string {
	b, _ := json.Marshal(defs)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12])
}

// newID returns a random ID for a call that came without one.
func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
