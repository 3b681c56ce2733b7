package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/runtimetest"
	"github.com/lathe-tools/lathe/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestConformance runs the runtime conformance suite against typed Go
// functions.
func TestConformance(t *testing.T) {
	runtimetest.Run(t, func(t *testing.T, name string) tool.Tool {
		return builtin.Must(conformanceTool(name))
	})
}

func conformanceTool(name string) (tool.Tool, error) {
	def := tool.Definition{Name: name, Summary: "The conformance suite's " + name + " tool."}
	switch name {
	case runtimetest.Echo:
		return builtin.Func(def, func(_ context.Context, in runtimetest.TextIn) (*tool.Result, error) {
			r := tool.TextResult(in.Text)
			r.Structured, _ = jsonObject("text", in.Text)
			return r, nil
		})
	case runtimetest.Fail:
		return builtin.Func(def, func(_ context.Context, in runtimetest.MessageIn) (string, error) {
			return "", errors.New(in.Message)
		})
	case runtimetest.Sleep:
		return builtin.Func(def, func(ctx context.Context, in runtimetest.MarkerIn) (string, error) {
			if err := os.WriteFile(in.Marker, []byte("started\n"), 0o644); err != nil {
				return "", err
			}
			<-ctx.Done()
			return "", ctx.Err()
		})
	case runtimetest.Crash:
		return builtin.Func(def, func(_ context.Context, in runtimetest.MessageIn) (string, error) {
			panic(in.Message)
		})
	case runtimetest.Huge:
		return builtin.Func(def, func(_ context.Context, in runtimetest.SizeIn) (string, error) {
			return strings.Repeat("x", in.Size), nil
		})
	case runtimetest.Ask:
		return builtin.Func(def, func(ctx context.Context, in runtimetest.SubjectIn) (string, error) {
			a, err := builtin.Ask(ctx, tool.Question{ID: "confirm", Text: "Go ahead with " + in.Subject + "?", Kind: tool.QuestionBoolean})
			if err != nil {
				return "", err
			}
			if !builtin.AnswerBool(a) {
				return "", errors.New("declined " + in.Subject)
			}
			return "confirmed " + in.Subject, nil
		})
	}
	return tool.Tool{}, errors.New("no conformance tool " + name)
}

func jsonObject(key, value string) ([]byte, error) {
	return json.Marshal(map[string]string{key: value})
}
