package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// exitConstants reads the Exit constants of exitcode.go, so that a new
// code cannot be added without its line in the help and the docs.
func exitConstants(t *testing.T) map[string]int {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "exitcode.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]int{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, "Exit") {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("%s is not a literal", n.Name)
				}
				v, err := strconv.Atoi(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				consts[n.Name] = v
			}
		}
	}
	if len(consts) < 10 {
		t.Fatalf("found %d Exit constants in exitcode.go, want the whole table", len(consts))
	}
	return consts
}

func TestHelpListsEveryExitCode(t *testing.T) {
	var out, errOut strings.Builder
	if code := Run(t.Context(), []string{"--help"}, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}); code != ExitOK {
		t.Fatalf("lathe --help exited %d: %s", code, errOut.String())
	}
	help := out.String()
	if !strings.Contains(help, docsURL) {
		t.Errorf("lathe --help does not point to the docs (%s):\n%s", docsURL, help)
	}
	docs, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, code := range exitConstants(t) {
		if !regexp.MustCompile(`(?m)^ +` + strconv.Itoa(code) + `  \S`).MatchString(help) {
			t.Errorf("lathe --help does not list exit code %d (%s):\n%s", code, name, help)
		}
		if !regexp.MustCompile(`(?m)^\| ` + strconv.Itoa(code) + ` \|`).Match(docs) {
			t.Errorf("docs/cli.md's table does not list exit code %d (%s)", code, name)
		}
	}
}
