// Command multitool is an example of a lathe tool binary with several tools,
// written with lathe's Go SDK. Register every tool it holds with
//
//	[toolsets.text]
//	command = ["./multitool"]
//
// in lathe.toml, and trust the file once with `lathe trust`; lathe asks the
// binary for its tools' schemas once and caches them. Try it by hand:
//
//	echo '{"protocol":1,"action":"schema"}' | go run ./examples/multitool
//	echo '{"protocol":1,"action":"run","tool":"word_count","arguments":{"text":"a b"}}' | go run ./examples/multitool
package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"unicode"

	"github.com/lathe-tools/lathe/sdk"
	"github.com/lathe-tools/lathe/tool"
)

func main() {
	sdk.Serve(tools()...)
}

func tools() []sdk.Tool {
	return []sdk.Tool{
		sdk.Func(sdk.Definition{
			Name:        "word_count",
			Summary:     "Count the words, lines and bytes of a text.",
			Annotations: tool.Annotations{ReadOnlyHint: true, IdempotentHint: true},
		}, wordCount),
		sdk.Format(sdk.Func(sdk.Definition{
			Name:        "slugify",
			Summary:     "Turn a title into a URL slug.",
			Description: "Lower-cases the text and joins its words with the separator, dropping punctuation.",
			Annotations: tool.Annotations{ReadOnlyHint: true, IdempotentHint: true},
		}, slugify), func(in slugIn) string { return "slug of " + in.Text }),
		sdk.Func(sdk.Definition{
			Name:        "delete_file",
			Summary:     "Delete a file of the workspace, after asking.",
			Annotations: tool.Annotations{DestructiveHint: tool.Bool(true)},
		}, deleteFile),
	}
}

type countIn struct {
	Text string `json:"text" jsonschema:"description=The text to count"`
}

type countOut struct {
	Words int `json:"words"`
	Lines int `json:"lines"`
	Bytes int `json:"bytes"`
}

func wordCount(_ context.Context, in countIn) (countOut, error) {
	return countOut{
		Words: len(strings.Fields(in.Text)),
		Lines: strings.Count(in.Text, "\n"),
		Bytes: len(in.Text),
	}, nil
}

type slugIn struct {
	Text      string `json:"text" jsonschema:"description=The title,minLength=1"`
	Separator string `json:"separator,omitempty" jsonschema:"description=What joins the words,enum=-,enum=_,default=-"`
}

func slugify(_ context.Context, in slugIn) (string, error) {
	sep := in.Separator
	if sep == "" {
		sep = "-"
	}
	words := strings.FieldsFunc(strings.ToLower(in.Text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	if len(words) == 0 {
		return "", errors.New("the text has no letters or digits to make a slug of")
	}
	return strings.Join(words, sep), nil
}

type deleteIn struct {
	Path string `json:"path" jsonschema_description:"The file to delete, relative to the workspace root"`
}

func deleteFile(ctx context.Context, in deleteIn) (string, error) {
	// Ask first: the tool runs again from the start with the answer.
	ok, err := sdk.AskBool(ctx, "confirm", "Delete "+in.Path+"?")
	if err != nil {
		return "", err
	}
	if !ok {
		return "kept " + in.Path, nil
	}
	// os.Root keeps the path inside the workspace, symbolic links included.
	root, err := os.OpenRoot(sdk.Root(ctx))
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := root.Remove(in.Path); err != nil {
		return "", err
	}
	return "deleted " + in.Path, nil
}
