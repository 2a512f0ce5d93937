package pgboot

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
)

// loopback is the only address a private cluster listens on.
const loopback = "127.0.0.1"

// maxSocketPath is the longest unix socket path the kernel accepts
// (sizeof(sun_path) less the terminating NUL).
const maxSocketPath = 107

// start starts the server on a free port and waits until it accepts
// connections.
func (c *cluster) start(ctx context.Context) (int, error) {
	port, err := freePort()
	if err != nil {
		return 0, err
	}
	if err := c.prepareLog(); err != nil {
		return 0, err
	}
	c.log.Info("pgboot: starting private postgres", "dir", c.dir, "port", port, "log", c.logFile)
	out, err := c.run.run(ctx, c.dir, "pg_ctl", "start", "-w", "-D", c.dir,
		"-l", c.logFile, "-o", c.serverOptions(port))
	if err != nil {
		return 0, fmt.Errorf("pg_ctl start: %w%s\nlast lines of %s:\n%s",
			err, quote(out), c.logFile, tailFile(c.logFile))
	}
	return port, nil
}

// serverOptions are postgres' flags. pg_ctl hands them to /bin/sh, hence
// the quoting.
func (c *cluster) serverOptions(port int) string {
	return fmt.Sprintf("-p %d -k %s -c listen_addresses=%s",
		port, shellQuote(c.socketDir()), loopback)
}

// socketDir puts the unix socket in the data directory, where only the
// cluster's owner can reach it, or turns unix sockets off ("") when that
// path is too long for one.
func (c *cluster) socketDir() string {
	if len(c.dir)+len("/.s.PGSQL.65535") > maxSocketPath {
		return ""
	}
	return c.dir
}

// prepareLog makes sure the server, which may run as another user, can
// append to its log.
func (c *cluster) prepareLog() error {
	f, err := os.OpenFile(c.logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("create log: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create log: %w", err)
	}
	return c.run.chown(c.logFile)
}

// freePort asks the kernel for a loopback port nobody uses right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", loopback+":0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
