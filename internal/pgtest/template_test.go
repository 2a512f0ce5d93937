package pgtest

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestUnfinishedTemplateIsRebuilt(t *testing.T) {
	key := "pgtest unfinished " + randomHex(4)
	name := templateName(key)
	admin := adminConn(t)
	t.Cleanup(func() { unmarkAndDrop(t, admin, name) })
	// What a process that died mid-migration leaves: a database never marked IS_TEMPLATE.
	if _, err := admin.Exec(t.Context(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create unfinished template: %v", err)
	}
	migrated := false
	err := ensureTemplate(t.Context(), adminURL, name, func(ctx context.Context, conn *pgx.Conn) error {
		migrated = true
		_, err := conn.Exec(ctx, "CREATE TABLE t (id int)")
		return err
	})
	if err != nil || !migrated {
		t.Fatalf("ensure template: err %v, migrated %v", err, migrated)
	}
	if exists, ready, err := templateState(t.Context(), admin, name); err != nil || !exists || !ready {
		t.Fatalf("template state: exists %v ready %v err %v", exists, ready, err)
	}
}

func TestFailedMigrationLeavesNoTemplate(t *testing.T) {
	name := templateName("pgtest failing " + randomHex(4))
	admin := adminConn(t)
	boom := errors.New("boom")
	err := ensureTemplate(t.Context(), adminURL, name, func(context.Context, *pgx.Conn) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the migration's error", err)
	}
	if exists, _, err := templateState(t.Context(), admin, name); err != nil || exists {
		t.Fatalf("failed template left behind: exists %v err %v", exists, err)
	}
}

func adminConn(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), adminURL)
	if err != nil {
		t.Fatalf("connect admin: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func unmarkAndDrop(t *testing.T, conn *pgx.Conn, name string) {
	ctx := context.Background()
	_, _ = conn.Exec(ctx, "ALTER DATABASE "+name+" IS_TEMPLATE false")
	if err := dropDatabase(ctx, conn, name); err != nil {
		t.Errorf("drop %s: %v", name, err)
	}
}
