package pgboot

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// SQLSTATEs a CREATE DATABASE raises when the database exists: 42P04 when
// it already did, 23505 on pg_database's name index when a concurrent
// CREATE DATABASE committed first.
const (
	sqlstateDuplicateDatabase = "42P04"
	sqlstateUniqueViolation   = "23505"
)

// serverURL is a password-less, TLS-less URL for user on addr.
func serverURL(addr, user, database string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(user),
		Host:     addr,
		Path:     "/" + database,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// ensureDatabase creates database name unless it exists, tolerating a
// concurrent creator.
func ensureDatabase(ctx context.Context, conn *pgx.Conn, name string) error {
	var exists bool
	err := conn.QueryRow(ctx,
		"SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists)
	if err != nil {
		return fmt.Errorf("look up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	if err != nil && !isDuplicateDatabase(err) {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// ensureDatabaseAt connects to the maintenance database "postgres" as user and
// makes sure database exists.
func ensureDatabaseAt(ctx context.Context, addr, user, database string) error {
	conn, err := connect(ctx, serverURL(addr, user, "postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return ensureDatabase(ctx, conn, database)
}

func isDuplicateDatabase(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	return pgErr.Code == sqlstateDuplicateDatabase ||
		pgErr.Code == sqlstateUniqueViolation && pgErr.ConstraintName == "pg_database_datname_index"
}

// WithDatabase returns the postgres:// URL u pointed at database name.
func WithDatabase(u, name string) (string, error) {
	parsed, err := url.Parse(u)
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err // the url.Error would repeat the URL, password and all
	}
	if err != nil {
		return "", fmt.Errorf("parse database URL: %w", err)
	}
	if parsed.Scheme != "postgres" && parsed.Scheme != "postgresql" {
		return "", fmt.Errorf("want a postgres:// URL, got scheme %q", parsed.Scheme)
	}
	parsed.Path, parsed.RawPath = "/"+name, ""
	return parsed.String(), nil
}

// CreateDatabase creates database name on the server adminURL reaches and
// returns a URL to it.
func CreateDatabase(ctx context.Context, adminURL, name string) (string, error) {
	u, err := WithDatabase(adminURL, name)
	if err != nil {
		return "", err
	}
	if err := adminExec(ctx, adminURL, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return u, nil
}

// DropDatabase drops database name, disconnecting anyone still on it.
func DropDatabase(ctx context.Context, adminURL, name string) error {
	if err := adminExec(ctx, adminURL, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

func adminExec(ctx context.Context, adminURL, sql string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}
