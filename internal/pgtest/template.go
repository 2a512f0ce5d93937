package pgtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/internal/pgboot"
)

// templateLock is the advisory lock key: held exclusively while a template
// is built, shared while one is cloned. ASCII "spinetpl".
const templateLock int64 = 0x7370696e6574706c

func templateName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "spine_tmpl_" + hex.EncodeToString(sum[:])[:12]
}

// ensureTemplate builds template name with migrate unless a finished one
// exists. A template is finished once it is marked IS_TEMPLATE.
func ensureTemplate(ctx context.Context, admin, name string, migrate MigrateFunc) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return fmt.Errorf("connect admin database: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLock); err != nil {
		return fmt.Errorf("lock templates: %w", err)
	}
	// Closing the session releases the lock too; this is the polite path.
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", templateLock)
	exists, ready, err := templateState(ctx, conn, name)
	if err != nil || ready {
		return err
	}
	if exists {
		if err := dropDatabase(ctx, conn, name); err != nil {
			return fmt.Errorf("drop unfinished template: %w", err)
		}
	}
	return buildTemplate(ctx, conn, admin, name, migrate)
}

func templateState(ctx context.Context, conn *pgx.Conn, name string) (exists, ready bool, err error) {
	err = conn.QueryRow(ctx, "SELECT datistemplate FROM pg_database WHERE datname = $1", name).Scan(&ready)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("look up template %s: %w", name, err)
	}
	return true, ready, nil
}

// buildTemplate creates and migrates the template and marks it finished. On
// failure it drops what it made.
func buildTemplate(ctx context.Context, conn *pgx.Conn, admin, name string, migrate MigrateFunc) error {
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		return fmt.Errorf("create template %s: %w", name, err)
	}
	err := migrateDatabase(ctx, admin, name, migrate)
	if err == nil {
		_, err = conn.Exec(ctx, "ALTER DATABASE "+ident+" IS_TEMPLATE true")
	}
	if err != nil {
		_ = dropDatabase(context.Background(), conn, name)
		return fmt.Errorf("build template %s: %w", name, err)
	}
	return nil
}

// migrateDatabase runs migrate on its own connection to database name and
// closes it, as nobody may be connected to a template being cloned.
func migrateDatabase(ctx context.Context, admin, name string, migrate MigrateFunc) error {
	u, err := pgboot.WithDatabase(admin, name)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	if err := migrate(ctx, conn); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

func dropDatabase(ctx context.Context, conn *pgx.Conn, name string) error {
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}
