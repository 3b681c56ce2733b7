package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/sdk"
	"github.com/lathe-tools/lathe/tool"
)

func handle(t *testing.T, req string, tools ...sdk.Tool) map[string]any {
	t.Helper()
	var out bytes.Buffer
	if err := sdk.Handle(context.Background(), strings.NewReader(req), &out, tools...); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("%s: %v", out.Bytes(), err)
	}
	return m
}

type pointIn struct {
	X int `json:"x"`
	Y int `json:"y,omitempty" jsonschema:"default=1"`
}

type pointOut struct {
	Sum int `json:"sum"`
}

var sumTool = sdk.Func(sdk.Definition{Name: "sum", Annotations: tool.Annotations{ReadOnlyHint: true}},
	func(ctx context.Context, in pointIn) (pointOut, error) {
		return pointOut{in.X + in.Y}, nil
	})

var failTool = sdk.Func(sdk.Definition{Name: "fail"}, func(ctx context.Context, in struct{}) (string, error) {
	return "", sdk.Transient(fmt.Errorf("upload failed: %w", errors.New("connection reset")))
})

var panicTool = sdk.Func(sdk.Definition{Name: "panic"}, func(ctx context.Context, in struct{}) (string, error) {
	panic("oops")
})

var contextTool = sdk.Func(sdk.Definition{Name: "ctx"}, func(ctx context.Context, in struct{}) (string, error) {
	return fmt.Sprint(sdk.Root(ctx), " ", sdk.CallID(ctx), " ", sdk.Options(ctx)["k"]), nil
})

func TestRunStructured(t *testing.T) {
	m := handle(t, `{"protocol":1,"action":"run","tool":"sum","arguments":{"x":2,"y":3}}`, sumTool, failTool)
	if m["type"] != "success" || fmt.Sprint(m["structured"]) != "map[sum:5]" || m["content"] != `{"sum":5}` {
		t.Errorf("answer = %v", m)
	}
}

func TestSchema(t *testing.T) {
	s, err := sumTool.Schema()
	if err != nil {
		t.Fatal(err)
	}
	want := protocol.ToolSchema{Name: "sum", Annotations: tool.Annotations{ReadOnlyHint: true},
		Parameters:   json.RawMessage(`{"properties":{"x":{"type":"integer"},"y":{"type":"integer","default":1}},"additionalProperties":false,"type":"object","required":["x"]}`),
		OutputSchema: json.RawMessage(`{"properties":{"sum":{"type":"integer"}},"additionalProperties":false,"type":"object","required":["sum"]}`)}
	if fmt.Sprint(s) != fmt.Sprint(want) {
		t.Errorf("schema:\n%s\n%s\nwant\n%s\n%s", s.Parameters, s.OutputSchema, want.Parameters, want.OutputSchema)
	}
}

func TestErrorAnswer(t *testing.T) {
	m := handle(t, `{"protocol":1,"action":"run","tool":"fail"}`, sumTool, failTool)
	if m["type"] != "error" || m["message"] != "upload failed: connection reset" || m["transient"] != true ||
		fmt.Sprint(m["trace"]) != "[connection reset]" {
		t.Errorf("answer = %v", m)
	}
}

func TestPanicIsAnError(t *testing.T) {
	m := handle(t, `{"protocol":1,"action":"run","tool":"panic"}`, panicTool)
	if m["type"] != "error" || !strings.Contains(m["message"].(string), "oops") {
		t.Errorf("answer = %v", m)
	}
}

func TestUnknownToolAndVersion(t *testing.T) {
	m := handle(t, `{"protocol":1,"action":"run","tool":"nope"}`, sumTool, failTool)
	if m["type"] != "error" || !strings.Contains(m["message"].(string), "sum, fail") {
		t.Errorf("answer = %v", m)
	}
	m = handle(t, `{"protocol":2,"action":"run","tool":"sum"}`, sumTool)
	if m["type"] != "error" || !strings.Contains(m["message"].(string), "version 2") {
		t.Errorf("answer = %v", m)
	}
}

func TestBadArguments(t *testing.T) {
	m := handle(t, `{"protocol":1,"action":"run","tool":"sum","arguments":{"x":"two"}}`, sumTool)
	if m["type"] != "error" || !strings.Contains(m["message"].(string), "do not fit") {
		t.Errorf("answer = %v", m)
	}
}

func TestContext(t *testing.T) {
	m := handle(t, `{"protocol":1,"action":"run","tool":"ctx","context":{"root":"/w","call_id":"c9","options":{"k":"v"}}}`, contextTool)
	if m["content"] != "/w c9 v" {
		t.Errorf("answer = %v", m)
	}
}

func TestFormatArguments(t *testing.T) {
	formatted := sdk.Format(sumTool, func(in pointIn) string { return fmt.Sprintf("%d + %d", in.X, in.Y) })
	m := handle(t, `{"protocol":1,"action":"format_arguments","tool":"sum","arguments":{"x":2,"y":3}}`, formatted)
	if m["content"] != "2 + 3" {
		t.Errorf("answer = %v", m)
	}
	m = handle(t, `{"protocol":1,"action":"format_arguments","tool":"sum","arguments":{ "x" : 2 }}`, sumTool)
	if m["content"] != `{"x":2}` {
		t.Errorf("answer = %v", m)
	}
}

func TestUnreadableRequest(t *testing.T) {
	var out bytes.Buffer
	if err := sdk.Handle(context.Background(), strings.NewReader("hello"), &out, sumTool); err == nil ||
		!strings.Contains(err.Error(), "lathe tool") {
		t.Errorf("err = %v", err)
	}
}

func TestSchemaFailure(t *testing.T) {
	type loop struct {
		Next []loop `json:"next"`
	}
	bad := sdk.Func(sdk.Definition{Name: "bad"}, func(ctx context.Context, in loop) (string, error) { return "", nil })
	var out bytes.Buffer
	if err := sdk.Handle(context.Background(), strings.NewReader(`{"protocol":1,"action":"schema"}`), &out, bad); err == nil ||
		!strings.Contains(err.Error(), "contains itself") {
		t.Errorf("err = %v", err)
	}
}
