package pgboot_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/spinehq/spine/internal/pgboot"
)

func TestFindLocalCreatesDatabase(t *testing.T) {
	requireLocalServer(t)
	db := uniqueName(t, "pgboot_test_")
	t.Cleanup(func() {
		execSQL(t, "postgres://postgres@"+localAddr+"/postgres?sslmode=disable",
			"DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
	})
	// Several finders at once: losing the CREATE DATABASE race is fine.
	var wg sync.WaitGroup
	results := make([]*pgboot.Result, 4)
	errs := make([]error, len(results))
	for i := range results {
		wg.Go(func() {
			results[i], errs[i] = pgboot.Find(t.Context(), pgboot.Options{Database: db, DataDir: t.TempDir()})
		})
	}
	wg.Wait()
	for i, res := range results {
		if errs[i] != nil {
			t.Fatalf("find %d: %v", i, errs[i])
		}
		if res.Source != "local" {
			t.Fatalf("find %d: source = %q, want local", i, res.Source)
		}
		if got := queryString(t, res.URL, "SELECT current_database()"); got != db {
			t.Fatalf("find %d: connected to %q, want %q", i, got, db)
		}
		if err := res.Stop(); err != nil {
			t.Fatalf("stop local: %v", err)
		}
	}
}

func TestFindUsesExplicitURLAsIs(t *testing.T) {
	requireLocalServer(t)
	url := "postgres://postgres@" + localAddr + "/postgres?sslmode=disable&application_name=pgboot_test"
	res, err := pgboot.Find(t.Context(), pgboot.Options{URL: url, Database: "ignored"})
	if err != nil {
		t.Fatalf("find: %v", err)
	}
	if res.URL != url || res.Source != "env" {
		t.Fatalf("got URL %q source %q, want %q env", res.URL, res.Source, url)
	}
	if err := res.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
}

func TestFindUnreachableExplicitURL(t *testing.T) {
	url := "postgres://postgres@" + deadAddr + "/spine?sslmode=disable"
	_, err := pgboot.Find(t.Context(), pgboot.Options{URL: url})
	if err == nil {
		t.Fatal("find succeeded with a dead URL")
	}
	msg := err.Error()
	if !strings.Contains(msg, "SPINE_DATABASE_URL is unreachable") || !strings.Contains(msg, "127.0.0.1") {
		t.Fatalf("error does not explain the dead URL: %v", err)
	}
	if errors.Is(err, pgboot.ErrNoPostgres) {
		t.Fatalf("a bad explicit URL should not read as 'install PostgreSQL': %v", err)
	}
}

func TestFindWithoutBinaries(t *testing.T) {
	dir := dataDir(t)
	_, err := pgboot.Find(context.Background(), pgboot.Options{
		LocalAddr: deadAddr,
		DataDir:   dir,
		BinDirs:   []string{dir + "/no-such-bin"},
	})
	if !errors.Is(err, pgboot.ErrNoPostgres) {
		t.Fatalf("err = %v, want ErrNoPostgres", err)
	}
	for _, want := range []string{"SPINE_DATABASE_URL", "apt-get install postgresql", deadAddr, dir + "/pg"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error does not mention %q:\n%v", want, err)
		}
	}
}
