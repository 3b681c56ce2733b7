package audit

import (
	"context"
	"database/sql"
)

// A call one tool makes through the engine while it runs (code mode's
// run_code calls tools from a script) is recorded as a child of the
// calling tool's record: its Parent is the caller's record ID. The link
// comes from the context, which the middleware marks with the ID of the
// record it started, so that any call made with a context derived from a
// running call's names that call, whoever makes it.

type parentKey struct{}

// withParent returns ctx marked as running the call recorded as id.
func withParent(ctx context.Context, id int64) context.Context {
	return context.WithValue(ctx, parentKey{}, id)
}

// parentFrom returns the ID of the record of the call ctx runs in, or 0.
func parentFrom(ctx context.Context) int64 {
	id, _ := ctx.Value(parentKey{}).(int64)
	return id
}

// migrateParent adds the calls' parent column to a log written before it
// existed. Like migrate, it runs in one immediate transaction, so that two
// processes opening an old log at once do not both add it.
func migrateParent(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	err := func() error {
		var n int
		if err := conn.QueryRowContext(ctx,
			`SELECT count(*) FROM pragma_table_info('calls') WHERE name = 'parent'`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		_, err := conn.ExecContext(ctx, `ALTER TABLE calls ADD COLUMN parent INTEGER NOT NULL DEFAULT 0`)
		return err
	}()
	if err != nil {
		conn.ExecContext(ctx, "ROLLBACK")
		return err
	}
	_, err = conn.ExecContext(ctx, "COMMIT")
	return err
}
