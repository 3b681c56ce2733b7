package policy

import (
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/tool"
)

// denyRM is a policy that denies rm and allows every other command, so that
// a spelling of rm the deny rule misses is allowed, not merely asked.
var denyRM = &Policy{Rules: []Rule{
	{Tool: "run_command", Args: "rm *", Approval: Deny},
	{Tool: "run_command", Approval: Allow},
}}

func decideCommand(p *Policy, command string) Decision {
	return p.Decide(&tool.Definition{Name: "run_command"}, map[string]any{"command": command})
}

// TestDenyEverySpelling holds the ways a command line can run rm. A deny
// rule for "rm *" must refuse each: a miss lets the command run unasked.
func TestDenyEverySpelling(t *testing.T) {
	for _, cmd := range []string{
		"rm -rf x",
		"a; rm -rf x",
		"a;rm -rf x",
		"a && rm -rf x",
		"a && rm",
		"a || rm -rf x",
		"a & rm -rf x",
		"a|rm -rf x",
		"a |& rm -rf x",
		"a\nrm -rf x",
		"a\r\nrm -rf x",
		"echo $(rm -rf x)",
		"$(rm -rf x)",
		"echo `rm -rf x`",
		`echo "$(rm -rf x)"`,
		"echo \"`rm -rf x`\"",
		"echo $(echo $(rm -rf x))",
		"(rm -rf x)",
		"{ rm -rf x; }",
		"! rm -rf x",
		"if true; then rm -rf x; fi",
		"if rm -rf x; then :; fi",
		"while true; do rm -rf x; done",
		"for f in a; do rm -rf $f; done",
		"case a in a) rm -rf x;; esac",
		"f() { rm -rf x; }; f",
		"rm\t-rf x",
		"rm  -rf   x",
		"/bin/rm -rf x",
		"/usr/bin/rm -rf x",
		"./rm -rf x",
		`\rm -rf x`,
		`'rm' -rf x`,
		`"rm" -rf x`,
		`r''m -rf x`,
		`r""m -rf x`,
		`r\m -rf x`,
		"r\\\nm -rf x",
		"rm \\\n -rf x",
		"FOO=1 rm -rf x",
		"FOO=1 BAR='a b' rm -rf x",
		"2>/dev/null rm -rf x",
		">out rm -rf x",
		"rm -rf x >/dev/null 2>&1",
		"cat <(rm -rf x)",
		"echo >(rm -rf x)",
		"command rm -rf x",
		"builtin command rm -rf x",
		"exec rm -rf x",
		"nohup rm -rf x",
		"time rm -rf x",
		"nice -n 5 rm -rf x",
		"timeout 5 rm -rf x",
		"env rm -rf x",
		"env -i FOO=1 rm -rf x",
		"sudo rm -rf x",
		"sudo -u root rm -rf x",
		"xargs rm -rf < list",
		"find . -exec rm -rf {} \\;",
		"sh -c 'rm -rf x'",
		`bash -c "rm -rf x"`,
		"bash -lc 'rm -rf x'",
		"sh -c 'sh -c \"rm -rf x\"'",
		"eval 'rm -rf x'",
		"eval rm -rf x",
		"echo ${x:-$(rm -rf x)}",
		"time -p rm -rf x",
		`$"rm" -rf x`,
		"coproc c { rm -rf x; }",
		`echo "$'"; rm -rf x`,
	} {
		if d := decideCommand(denyRM, cmd); d.Approval != Deny {
			t.Errorf("%q: %s (%s), want deny", cmd, d.Approval, d.Reason)
		}
	}
}

// TestUnknownCommandAsks holds command lines whose command is known only
// when the shell runs them, or that the splitter cannot read. Under a deny
// rule they must be asked, never allowed by another rule.
func TestUnknownCommandAsks(t *testing.T) {
	for _, cmd := range []string{
		"$(echo rm) -rf x",
		"`echo rm` -rf x",
		"$CMD -rf x",
		"${CMD} -rf x",
		`"$CMD" -rf x`,
		"x=rm; $x -rf x",
		"/bin/r? -rf x",
		"/bin/r* -rf x",
		"r[m] -rf x",
		"sh -c \"$X\"",
		"eval \"$X\"",
		"sudo $CMD -rf x",
		`$'\x72m' -rf x`,
		"{rm,-rf,x}",
		"echo rm -rf x | sh",
		"sh <<< 'rm -rf x'",
		"bash < script",
		"echo 'unbalanced",
		`echo "unbalanced`,
		"echo $(unbalanced",
		"echo `unbalanced",
		strings.Repeat("echo $(", 20) + "rm -rf x" + strings.Repeat(")", 20),
		strings.Repeat("sudo ", 1<<16) + "x",
	} {
		d := decideCommand(denyRM, cmd)
		if d.Approval == Allow {
			t.Errorf("%q: allowed (%s), want ask or deny", cmd, d.Reason)
		}
	}
}

// TestDenyKeepsOtherCommands checks that the deny rule does not catch
// commands that only mention rm, so that the allow rule still applies.
func TestDenyKeepsOtherCommands(t *testing.T) {
	for _, cmd := range []string{
		"ls -l",
		"echo rm -rf x",
		"echo 'rm -rf x; ls'",
		"grep -r rm .",
		"git rm --cached x",
		"echo $HOME",
		"ls \"$HOME\"",
		"rmdir x",
		"echo a; ls",
		"FOO=$(pwd) ls",
	} {
		if d := decideCommand(denyRM, cmd); d.Approval != Allow {
			t.Errorf("%q: %s (%s), want allow", cmd, d.Approval, d.Reason)
		}
	}
}

// FuzzDenyChained appends an rm command to any text after a control
// operator: whatever the text is, the deny rule must not let the whole be
// allowed. The one text that can hide the operator from the shell, an odd
// run of backslashes at its end, escapes it, so that rm is no command there.
func FuzzDenyChained(f *testing.F) {
	seps := []string{";", "&&", "||", "|", "\n", "&", " ; ", "\n\n"}
	for _, s := range []string{"ls", "echo 'a b'", `echo "$(pwd)"`, "git status", "cat <<EOF", "echo ${x", "a`b", "if true; then", "{", "(", "'", `"`} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, s string, sep uint8) {
		if trailing := len(s) - len(strings.TrimRight(s, `\`)); trailing%2 == 1 {
			return
		}
		cmd := s + seps[int(sep)%len(seps)] + "rm -rf x"
		if d := decideCommand(denyRM, cmd); d.Approval == Allow {
			t.Errorf("%q: allowed (%s)", cmd, d.Reason)
		}
	})
}

// FuzzReadShell checks that the reader ends on any text, and that a
// command it finds is never empty.
func FuzzReadShell(f *testing.F) {
	for _, s := range []string{"a; rm -rf x", "echo $(echo `rm`)", `sh -c "eval 'rm -rf x'"`, "sudo -u root env A=1 rm x", "${x:-$(y)}", "<(a) >(b)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range readShell(s).commands {
			if c == "" {
				t.Errorf("%q: an empty command", s)
			}
		}
	})
}

// TestDenyOtherArguments checks that text other than a command line is not
// read as shell: a deny rule over paths must not ask for every path with a
// star or a brace, nor for arguments rendered as JSON.
func TestDenyOtherArguments(t *testing.T) {
	p := &Policy{Rules: []Rule{
		{Tool: "write_file", Args: "*.env*", Approval: Deny},
		{Tool: "glob", Arg: "pattern", Args: "/etc/*", Approval: Deny},
		{Tool: "*", Approval: Allow},
	}}
	for _, c := range []struct {
		tool string
		args map[string]any
		want Approval
	}{
		{"write_file", map[string]any{"path": "a{1,2}/$x.txt", "content": "rm -rf x; $(y)"}, Allow},
		{"write_file", map[string]any{"path": "prod.env", "content": "x"}, Deny},
		{"glob", map[string]any{"pattern": "**/*.go"}, Allow},
		{"glob", map[string]any{"pattern": "/etc/*"}, Deny},
	} {
		if d := p.Decide(&tool.Definition{Name: c.tool}, c.args); d.Approval != c.want {
			t.Errorf("%s %v: %s (%s), want %s", c.tool, c.args, d.Approval, d.Reason, c.want)
		}
	}
}
