package js

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/tool"
)

// The bridge between the prelude's ctx and the host: every ctx operation
// arrives here as a method and its parameters in JSON, becomes one request
// of the call's host session (so the tool's permissions, the policy and the
// audit apply to it), and goes back as {"r": result} or {"e": {code,
// message}}, which the prelude throws as an Error with that code.

// Codes of errors the bridge makes itself, in the host's numbering.
const (
	codeNoHost = host.CodeDenied
)

// payload is data the prelude sends: a string as text, bytes as numbers.
type payload struct {
	Text  *string `json:"text"`
	Bytes []int   `json:"bytes"`
}

func (p *payload) data() ([]byte, error) {
	if p == nil {
		return nil, nil
	}
	if p.Text != nil {
		return []byte(*p.Text), nil
	}
	b := make([]byte, len(p.Bytes))
	for i, v := range p.Bytes {
		if v < 0 || v > 255 {
			return nil, fmt.Errorf("byte %d is %d, not in 0..255", i, v)
		}
		b[i] = byte(v)
	}
	return b, nil
}

func envelope(v any) (any, error) {
	b, err := json.Marshal(struct {
		R any `json:"r,omitempty"`
	}{v})
	if err != nil {
		return errEnvelope(host.CodeFailed, "the host's answer does not encode: "+err.Error())
	}
	return string(b), nil
}

func errEnvelope(code int, msg string) (any, error) {
	b, _ := json.Marshal(map[string]any{"e": map[string]any{"code": code, "message": msg}})
	return string(b), nil
}

// host answers one ctx operation. It refuses every operation once execute
// has settled: a promise chain the tool left running after it returned
// never reaches the host.
func (c *call) host(args []any) (any, error) {
	if len(args) != 2 {
		return errEnvelope(-32600, "bad bridge call")
	}
	method, _ := args[0].(string)
	params, _ := args[1].(string)
	if c.settled || c.question != nil {
		return errEnvelope(host.CodeEnded, "the call has returned; "+method+" was not run")
	}
	if method == "ask" {
		return c.ask([]byte(params))
	}
	if c.sess == nil {
		return errEnvelope(codeNoHost, fmt.Sprintf("%s: this tool has no host API (no host); nothing was done", method))
	}
	v, err := c.do(method, []byte(params))
	if err != nil {
		if he, ok := err.(*host.Error); ok {
			return errEnvelope(he.Code, he.Message)
		}
		return errEnvelope(host.CodeFailed, err.Error())
	}
	return envelope(v)
}

// request runs one host request and decodes its result into res.
func (c *call) request(method string, params, res any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	out, err := c.sess.Do(c.ctx, method, p)
	if err != nil {
		return err
	}
	if res == nil {
		return nil
	}
	return json.Unmarshal(out, res)
}

func (c *call) do(method string, params []byte) (any, error) {
	bad := func(err error) error {
		return &host.Error{Code: -32602, Message: fmt.Sprintf("%s: bad parameters: %v", method, err)}
	}
	switch method {
	case "readFile", "readBytes":
		var p host.PathParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, bad(err)
		}
		data, err := c.readAll(p.Path)
		if err != nil {
			return nil, err
		}
		if method == "readFile" {
			return string(data), nil
		}
		nums := make([]int, len(data))
		for i, b := range data {
			nums[i] = int(b)
		}
		return nums, nil
	case "writeFile":
		var p struct {
			payload
			Path     string `json:"path"`
			Append   bool   `json:"append"`
			MakeDirs bool   `json:"makeDirs"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, bad(err)
		}
		data, err := p.payload.data()
		if err != nil {
			return nil, bad(err)
		}
		var res host.WriteResult
		err = c.request(host.MethodWrite, host.WriteParams{Path: p.Path, Data: data, Append: p.Append, MakeDirs: p.MakeDirs}, &res)
		return res.Written, err
	case "list":
		var p host.PathParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, bad(err)
		}
		var res host.ListResult
		if err := c.request(host.MethodList, p, &res); err != nil {
			return nil, err
		}
		if res.Entries == nil {
			res.Entries = []host.FileInfo{}
		}
		return res.Entries, nil
	case "stat":
		var p host.PathParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, bad(err)
		}
		var res host.FileInfo
		err := c.request(host.MethodStat, p, &res)
		return res, err
	case "remove":
		var p host.RemoveParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, bad(err)
		}
		return true, c.request(host.MethodRemove, p, nil)
	case "fetch":
		var p struct {
			URL     string            `json:"url"`
			Method  string            `json:"method"`
			Headers map[string]string `json:"headers"`
			Body    *payload          `json:"body"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, bad(err)
		}
		body, err := p.Body.data()
		if err != nil {
			return nil, bad(err)
		}
		var res host.FetchResult
		if err := c.request(host.MethodFetch, host.FetchParams{URL: p.URL, Method: p.Method, Headers: p.Headers, Body: body}, &res); err != nil {
			return nil, err
		}
		return map[string]any{"status": res.Status, "headers": orEmpty(res.Headers), "body": string(res.Body), "truncated": res.Truncated}, nil
	case "run":
		var p struct {
			Argv  []string `json:"argv"`
			Stdin *payload `json:"stdin"`
			Dir   string   `json:"dir"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, bad(err)
		}
		stdin, err := p.Stdin.data()
		if err != nil {
			return nil, bad(err)
		}
		var res host.RunResult
		if err := c.request(host.MethodRun, host.RunParams{Argv: p.Argv, Stdin: stdin, Dir: p.Dir}, &res); err != nil {
			return nil, err
		}
		return map[string]any{"exitCode": res.ExitCode, "stdout": string(res.Stdout), "stderr": string(res.Stderr), "truncated": res.Truncated}, nil
	case "env":
		var p host.EnvParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, bad(err)
		}
		var res host.EnvResult
		if err := c.request(host.MethodEnv, p, &res); err != nil {
			return nil, err
		}
		if !res.Set {
			return nil, nil
		}
		return res.Value, nil
	case "log":
		var p host.LogParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, bad(err)
		}
		return nil, c.request(host.MethodLog, p, nil)
	case "progress":
		var p host.ProgressParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, bad(err)
		}
		return nil, c.request(host.MethodProgress, p, nil)
	}
	return nil, &host.Error{Code: -32601, Message: "no such host operation: " + method}
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// readAll reads a whole file, one host read after another; the engine's
// memory limit bounds what a tool can hold, and the reads stop there.
func (c *call) readAll(path string) ([]byte, error) {
	var data []byte
	for {
		var res host.ReadResult
		if err := c.request(host.MethodRead, host.ReadParams{Path: path, Offset: int64(len(data))}, &res); err != nil {
			return nil, err
		}
		data = append(data, res.Data...)
		if res.EOF || len(res.Data) == 0 {
			return data, nil
		}
		if int64(len(data)) > c.limit {
			return nil, &host.Error{Code: host.CodeTooLarge, Message: fmt.Sprintf("fs/read: %s is larger than the tool's memory limit of %d MiB", path, c.limit>>20)}
		}
	}
}

// ask answers ctx.ask from the call's answers, or ends the call with the
// question: the engine is interrupted as it returns to the script, which
// cannot catch that, and Execute returns the question.
func (c *call) ask(params []byte) (any, error) {
	var p struct {
		ID      string          `json:"id"`
		Text    string          `json:"text"`
		Type    json.RawMessage `json:"type"`
		Default any             `json:"default"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return errEnvelope(-32602, "ask: the question must be {id, text, type, default?}: "+err.Error())
	}
	q := &tool.Question{ID: p.ID, Text: p.Text, Default: p.Default}
	var sel struct {
		Select []string `json:"select"`
	}
	var kind string
	switch {
	case len(p.Type) == 0 || string(p.Type) == "null":
		q.Kind = tool.QuestionText
	case json.Unmarshal(p.Type, &kind) == nil && (kind == "boolean" || kind == "text"):
		q.Kind = tool.QuestionKind(kind)
	case json.Unmarshal(p.Type, &sel) == nil && len(sel.Select) > 0:
		q.Kind, q.Options = tool.QuestionSelect, sel.Select
	default:
		return errEnvelope(-32602, `ask: type must be "boolean", "text" or {select: [options]}, got `+string(p.Type))
	}
	switch {
	case strings.TrimSpace(q.ID) == "":
		return errEnvelope(-32602, "ask: the question has no id")
	case strings.TrimSpace(q.Text) == "":
		return errEnvelope(-32602, "ask: the question has no text")
	}
	if a, ok := c.answers[q.ID]; ok {
		if err := q.CheckAnswer(a); err != nil {
			return errEnvelope(-32602, err.Error())
		}
		if s, isStr := a.(string); isStr && q.Kind == tool.QuestionBoolean {
			switch strings.ToLower(s) {
			case "yes", "true", "y", "1":
				a = true
			default:
				a = false
			}
		}
		return envelope(a)
	}
	c.question = q
	c.vm.Interrupt()
	return errEnvelope(host.CodeEnded, "the call ends here with a question")
}
