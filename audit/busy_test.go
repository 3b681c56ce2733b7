package audit

import (
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
)

// TestIsBusy: the error SQLite gives a writer locked out by another
// connection is what Open tries again on, and no other error is.
func TestIsBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	holder, err := sql.Open("sqlite", fileURI(path))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	tx, err := holder.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec("CREATE TABLE t (x)"); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", fileURI(path)+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = other.Exec("CREATE TABLE u (x)")
	if err == nil || !isBusy(err) {
		t.Fatalf("a write locked out by another connection: %v, isBusy = %v", err, isBusy(err))
	}
	if isBusy(errors.New("database is locked")) {
		t.Error("a plain error taken for SQLITE_BUSY")
	}
	if _, err := other.Exec("NOT SQL"); err == nil || isBusy(err) {
		t.Errorf("a syntax error taken for SQLITE_BUSY: %v", err)
	}
}
