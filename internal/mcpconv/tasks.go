package mcpconv

import (
	"bytes"
	"encoding/json"
)

// MCP tasks (protocol 2025-11-25) ask for a task with a field of tools/call's
// params, "task", which the SDK's CallToolParams does not model and so drops.
// lathe moves the field into the params' _meta under TaskMetaKey at the edge
// of a connection (where the message is still JSON), so that it survives the
// SDK's decoding, and moves it back when it sends a call on. A client that
// writes the key into _meta itself asks for a task just as with "task".
const TaskMetaKey = "lathe/task"

// RelatedTaskKey is the _meta key that ties a message to a task.
const RelatedTaskKey = "io.modelcontextprotocol/related-task"

// The statuses of a task.
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// Task is a task as MCP sends it: the result of tasks/get and tasks/cancel,
// an entry of tasks/list, and the "task" of a CreateTaskResult.
type Task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTL is how long the task is kept from its creation, in milliseconds;
	// nil means without limit (lathe always sets one).
	TTL          *int64 `json:"ttl"`
	PollInterval int64  `json:"pollInterval,omitempty"`
}

// Terminal reports whether status is one a task never leaves.
func Terminal(status string) bool {
	return status == TaskCompleted || status == TaskFailed || status == TaskCancelled
}

// MoveField moves the member from of the JSON object obj into the object
// under "_meta" as key to, or (reverse) the member key of "_meta" out to
// from. It returns obj unchanged, and false, when there is nothing to move or
// obj is no object. Other members keep their bytes.
func MoveField(obj json.RawMessage, from, key string, reverse bool) (json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil || m == nil {
		return obj, false
	}
	var meta map[string]json.RawMessage
	if raw, ok := m["_meta"]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &meta) != nil {
			return obj, false
		}
	}
	if reverse {
		v, ok := meta[key]
		if !ok {
			return obj, false
		}
		delete(meta, key)
		m[from] = v
	} else {
		v, ok := m[from]
		if !ok {
			return obj, false
		}
		delete(m, from)
		if meta == nil {
			meta = map[string]json.RawMessage{}
		}
		meta[key] = v
	}
	if len(meta) == 0 {
		delete(m, "_meta")
	} else {
		b, err := json.Marshal(meta)
		if err != nil {
			return obj, false
		}
		m["_meta"] = b
	}
	b, err := json.Marshal(m)
	if err != nil {
		return obj, false
	}
	return b, true
}

func isNull(b json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(b), []byte("null")) }
