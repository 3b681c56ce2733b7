package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"time"
)

// Besides tool calls, the log keeps what clients of lathe's MCP server
// read and get from its upstream servers: each resource read and each
// prompt get is a record of the calls table, as a call is, with its Kind
// saying which it is, Tool holding the URI or the prompt's name as served,
// Arguments a prompt's arguments, redacted as a call's are, Session the
// client's session and Server the upstream server it went to. A request
// lathe refuses (a URI that several servers claim) is recorded with the
// decision "deny" and the outcome "denied".

// Kinds of records besides calls (a call's Kind is "").
const (
	KindResourceRead = "resource_read"
	KindPromptGet    = "prompt_get"
)

// accessColumns are the columns of these records to a log written before
// they existed; a call's row keeps their defaults.
var accessColumns = []struct{ name, decl string }{
	{"kind", "TEXT NOT NULL DEFAULT ''"},
	{"session", "TEXT NOT NULL DEFAULT ''"},
	{"server", "TEXT NOT NULL DEFAULT ''"},
}

// migrateAccess brings a log to the schema of access records, in one
// immediate transaction as migrate does, so that two processes opening an
// old log at once do not both add a column.
func migrateAccess(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	err := func() error {
		for _, c := range accessColumns {
			var n int
			if err := conn.QueryRowContext(ctx,
				`SELECT count(*) FROM pragma_table_info('calls') WHERE name = ?`, c.name).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				if _, err := conn.ExecContext(ctx, `ALTER TABLE calls ADD COLUMN `+c.name+` `+c.decl); err != nil {
					return err
				}
			}
		}
		return nil
	}()
	if err != nil {
		conn.ExecContext(ctx, "ROLLBACK")
		return err
	}
	_, err = conn.ExecContext(ctx, "COMMIT")
	return err
}

// Access is a resource read or a prompt get of a client of lathe's MCP
// server, as [Store.StartAccess] records it.
type Access struct {
	// Kind is [KindResourceRead] or [KindPromptGet].
	Kind string
	// Session names the client's session.
	Session string
	// Name is the resource's URI or the prompt's name, as the client asked.
	Name string
	// Arguments are a prompt's arguments.
	Arguments map[string]string
	// Server is the upstream server the request went to; "" when it went
	// to none.
	Server string
}

// AccessEnd is how an access ended.
type AccessEnd struct {
	// Denied says lathe refused it, for Reason.
	Denied bool
	Reason string
	// Outcome is "ok", or an error kind; Denied makes it "denied".
	Outcome string
	Bytes   int
}

// StartAccess writes the started record of a, its name and arguments
// redacted by r (nil: the default rules), and returns the function that
// completes it; a read must not go ahead when its record cannot be
// written.
func (s *Store) StartAccess(ctx context.Context, a *Access, r *Redactor) (finish func(AccessEnd) error, err error) {
	if r == nil {
		r = defaultRedactor()
	}
	args := ""
	if len(a.Arguments) > 0 {
		b, _ := json.Marshal(a.Arguments)
		args = r.Redact(b)
	}
	start := time.Now()
	rec := &Record{Time: start, Tool: redactURI(r, a.Name), Arguments: args, ArgsBytes: len(args), PID: os.Getpid(),
		Kind: a.Kind, Session: a.Session, Server: a.Server}
	id, err := s.Start(ctx, rec)
	if err != nil {
		return nil, err
	}
	return func(e AccessEnd) error {
		rec.Duration = time.Since(start)
		rec.Outcome, rec.ResultBytes = e.Outcome, e.Bytes
		if e.Denied {
			rec.Decision, rec.DecidedBy, rec.Reason, rec.Outcome = "deny", "gateway", r.text(e.Reason), "denied"
		}
		return s.Finish(ctx, id, rec)
	}, nil
}

// redactURI redacts a URI as an argument's string is, and the values of
// its query string and its userinfo, where URIs carry secrets.
func redactURI(r *Redactor, uri string) string {
	u, err := url.Parse(uri)
	if err == nil && (u.User != nil || u.RawQuery != "") {
		if u.User != nil {
			u.User = url.User(Redacted)
		}
		if u.RawQuery != "" {
			q := strings.Split(u.RawQuery, "&")
			for i, kv := range q {
				if k, _, ok := strings.Cut(kv, "="); ok {
					q[i] = k + "=" + Redacted
				} else if kv != "" {
					q[i] = Redacted
				}
			}
			u.RawQuery = strings.Join(q, "&")
		}
		uri = u.String()
	}
	return r.text(uri)
}
