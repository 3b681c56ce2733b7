package main

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/lathe-tools/lathe/sdk"
	"github.com/lathe-tools/lathe/tool"
)

// sdkTool is a tool binary written with the SDK, for local*.txtar: the
// scripts run it as lathe-sdk-tool.
func sdkTool() {
	sdk.Serve(
		sdk.Func(sdk.Definition{Name: "greet", Summary: "Greet someone.", Description: "Says hello.",
			Annotations: tool.Annotations{ReadOnlyHint: true}},
			func(ctx context.Context, in struct {
				Name  string `json:"name" jsonschema:"description=Who to greet"`
				Style string `json:"style,omitempty" jsonschema:"enum=plain,enum=loud,enum=shy"`
			}) (string, error) {
				s := "hello, " + in.Name
				if in.Style == "loud" {
					s = strings.ToUpper(s) + "!"
				}
				if prefix, ok := sdk.Options(ctx)["prefix"].(string); ok {
					s = prefix + s
				}
				return s, nil
			}),
		sdk.Func(sdk.Definition{Name: "count", Summary: "Count words."},
			func(_ context.Context, in struct {
				Text string `json:"text"`
			}) (struct {
				Words int `json:"words"`
			}, error) {
				return struct {
					Words int `json:"words"`
				}{len(strings.Fields(in.Text))}, nil
			}),
		sdk.Func(sdk.Definition{Name: "remove", Summary: "Remove a file, after asking."},
			func(ctx context.Context, in struct {
				Path string `json:"path"`
			}) (string, error) {
				ok, err := sdk.AskBool(ctx, "sure", "Remove "+in.Path+"?")
				if err != nil {
					return "", err
				}
				if !ok {
					return "", errors.New("kept " + in.Path)
				}
				if err := os.Remove(in.Path); err != nil {
					return "", err
				}
				return "removed " + in.Path, nil
			}),
	)
}
