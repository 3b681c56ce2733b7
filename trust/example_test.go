package trust_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lathe-tools/lathe/trust"
)

func ExampleStore() {
	root, _ := os.MkdirTemp("", "trust-example")
	defer os.RemoveAll(root)
	ws := filepath.Join(root, "project")
	os.Mkdir(ws, 0o755)
	file := filepath.Join(ws, "lathe.toml")
	data := []byte("[tools.lint]\ncommand = [\"./lint.sh\"]\n")

	// The store lives outside every workspace, in $XDG_STATE_HOME/lathe/trust
	// in real use.
	store := trust.Open(filepath.Join(root, "state", "lathe", "trust"))

	st, _, _ := store.Check(ws, file, data)
	fmt.Println(st)

	// A person read the file and said yes.
	store.Trust(ws, file, data)
	st, _, _ = store.Check(ws, file, data)
	fmt.Println(st)

	// One byte changed is another file: it needs trust again.
	changed := []byte("[tools.lint]\ncommand = [\"./lint.sh\", \"-x\"]\n")
	st, rec, _ := store.Check(ws, file, changed)
	fmt.Println(st)
	fmt.Print(trust.Diff(rec.Content, string(changed)))
	// Output:
	// not trusted yet
	// trusted
	// changed since it was trusted
	//   [tools.lint]
	// - command = ["./lint.sh"]
	// + command = ["./lint.sh", "-x"]
}
