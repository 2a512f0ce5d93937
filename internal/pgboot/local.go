package pgboot

import (
	"context"
	"net"
	"os"
	"os/user"
	"slices"
	"time"
)

// dialTimeout bounds the check that anything listens on the local address.
const dialTimeout = time.Second

// findLocal tries a server on opts.LocalAddr. On failure it returns why, for
// the error Find gives if nothing else works either.
func findLocal(ctx context.Context, opts Options) (*Result, string) {
	if err := dial(ctx, opts.LocalAddr); err != nil {
		opts.Logger.Debug("pgboot: no local server", "addr", opts.LocalAddr, "err", err)
		return nil, localFailure(opts.LocalAddr, err, nil, nil)
	}
	var lastErr error
	users := localUsers()
	for _, u := range users {
		lastErr = ensureDatabaseAt(ctx, opts.LocalAddr, u, opts.Database)
		if lastErr == nil {
			opts.Logger.Info("pgboot: using local postgres", "source", "local",
				"addr", opts.LocalAddr, "user", u, "database", opts.Database)
			url := serverURL(opts.LocalAddr, u, opts.Database)
			return &Result{URL: url, Source: "local", Stop: noStop}, ""
		}
		opts.Logger.Debug("pgboot: local user refused", "user", u, "err", lastErr)
	}
	return nil, localFailure(opts.LocalAddr, nil, users, lastErr)
}

func dial(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// localUsers lists the roles to try, in order, without repeats.
func localUsers() []string {
	var users []string
	if u := os.Getenv("PGUSER"); u != "" {
		users = append(users, u)
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		users = append(users, u.Username)
	}
	var unique []string
	for _, u := range append(users, "postgres") {
		if !slices.Contains(unique, u) {
			unique = append(unique, u)
		}
	}
	return unique
}
