package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/policy"
)

// personWho names the person at the terminal in the audit log, when lathe
// call's own command line is the approval.
const personWho = "person"

// openGrants returns the grants of the workspace ws, kept in the user's
// state directory.
func openGrants(ws string) (*audit.Grants, error) {
	dir, err := audit.DefaultGrantDir()
	if err != nil {
		return nil, err
	}
	return audit.OpenGrants(dir, ws)
}

// terminalApprover asks for approvals on the terminal, or is nil when
// standard input is not one.
func terminalApprover(s Streams) policy.Approver {
	f, ok := s.In.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return newApprover(f, s.Err)
}

// newApprover asks on w and reads answers from in. Calls of a batch run
// at once, so their questions are put one at a time.
func newApprover(in io.Reader, w io.Writer) policy.Approver {
	r := bufio.NewReader(in)
	var mu sync.Mutex
	return policy.ApproverFunc(func(ctx context.Context, req *policy.Request) (policy.Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		if op := req.Operation; op != nil {
			// The call runs already: what is asked is one thing it wants
			// lathe's host to do.
			fmt.Fprintf(w, "%s, running, wants to %s: %s\n  (%s)\n", req.Tool.Name, op.Kind, op.Subject, req.Reason)
		} else {
			fmt.Fprintf(w, "%s wants to run: %s\n  (%s)\n", req.Tool.Name, req.Arguments, req.Reason)
		}
		for {
			fmt.Fprint(w, "Allow? [o]nce, [s]ession, [a]lways, [d]eny: ")
			line, err := r.ReadString('\n')
			if err != nil && line == "" {
				return policy.Answer{}, fmt.Errorf("no answer on the terminal: %w", err)
			}
			switch strings.ToLower(strings.TrimSpace(line)) {
			case "o", "once", "y", "yes":
				return policy.Answer{Verdict: policy.AllowOnce}, nil
			case "s", "session":
				return policy.Answer{Verdict: policy.AllowSession}, nil
			case "a", "always":
				return policy.Answer{Verdict: policy.AllowAlways}, nil
			case "d", "deny", "n", "no":
				fmt.Fprint(w, "Reason for the model (optional): ")
				reason, _ := r.ReadString('\n')
				return policy.Answer{Verdict: policy.Refuse, Reason: strings.TrimSpace(reason)}, nil
			}
		}
	})
}
