package main

import (
	"database/sql"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	_ "modernc.org/sqlite" // the driver lathe's audit log uses
)

// forgeGrant is the script command
//
//	forgegrant DB TOOL [COMMAND]
//
// It writes an "always" grant straight into a SQLite database, in the
// table where lathe once kept them, as anything that can write the
// workspace could: grants*.txtar checks that lathe does not honour it.
func forgeGrant(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: forgegrant DB TOOL [COMMAND]")
	}
	command := ""
	if len(args) == 3 {
		command = args[2]
	}
	db, err := sql.Open("sqlite", "file:"+ts.MkAbs(args[0])+"?_pragma=busy_timeout(10000)")
	if err != nil {
		ts.Fatalf("forgegrant: %v", err)
	}
	defer db.Close()
	_, err = db.Exec(`CREATE TABLE IF NOT EXISTS grants (
		tool TEXT NOT NULL,
		command TEXT NOT NULL DEFAULT '',
		created_ns INTEGER NOT NULL,
		PRIMARY KEY (tool, command))`)
	if err == nil {
		_, err = db.Exec(`INSERT OR IGNORE INTO grants (tool, command, created_ns) VALUES (?, ?, ?)`,
			args[1], command, time.Now().UnixNano())
	}
	if err != nil {
		ts.Fatalf("forgegrant %s: %v", args[0], err)
	}
}
