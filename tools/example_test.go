package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

func Example() {
	dir, err := os.MkdirTemp("", "workspace")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	e := lathe.New(lathe.Options{})
	defer e.Close()
	ts, err := tools.Standard(dir, tools.Options{Describe: e.Lookup})
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Register(ts...); err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	run := func(name, args string) {
		out := e.Call(ctx, &tool.Call{Name: name, Arguments: json.RawMessage(args)})
		if out.Result.IsError {
			fmt.Printf("%s failed (%s): %s\n", name, out.Result.ErrorKind, out.Result.Text())
			return
		}
		fmt.Println(out.Result.Text())
	}
	run("write_file", `{"path": "notes/todo.txt", "content": "buy milk\nfix bug\n"}`)
	run("edit_file", `{"path": "notes/todo.txt", "old_string": "fix bug", "new_string": "fix the bug"}`)
	run("read_file", `{"path": "notes/todo.txt", "offset": 2}`)
	run("grep", `{"pattern": "milk"}`)
	run("read_file", `{"path": "../secrets.txt"}`)
	// Output:
	// created "notes/todo.txt" (17 bytes written)
	// edited "notes/todo.txt": 1 replacement
	// fix the bug
	// [showing lines 2-2 of 2]
	// notes/todo.txt:1:buy milk
	// read_file failed (denied): path "../secrets.txt" is outside the workspace
}
