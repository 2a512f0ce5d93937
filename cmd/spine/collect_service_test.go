package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/spinetest"
)

// serviceDoc is the page whose "As a service" section this test holds true.
const serviceDoc = "../../docs/collect.md"

// The systemd unit and the launchd agent in docs/collect.md run `spine
// collect` with no flags, configured by the environment alone (SPINE_URL
// and SPINE_TOKEN), under the user's HOME. Their command line, run as a
// service manager runs it (an environment of HOME, PATH and those two,
// stopped with SIGTERM), collects both apps' files under that HOME, keeps
// running until stopped (a service that exits 0 is not restarted), keeps
// its offsets under HOME's config dir, and exits 0 on SIGTERM, so
// Restart=on-failure and KeepAlive restart it only when it failed. The
// managers themselves are not run here.
func TestCollectAsAService(t *testing.T) {
	doc, err := os.ReadFile(serviceDoc)
	if err != nil {
		t.Fatal(err)
	}
	unitArgs, plistArgs := systemdExecStart(t, doc), launchdArguments(t, doc)
	for _, args := range [][]string{unitArgs, plistArgs} {
		if len(args) < 2 || filepath.Base(args[0]) != "spine" || !slices.Equal(args[1:], []string{"collect"}) {
			t.Fatalf("a service in %s runs %q, want the spine binary and collect alone", serviceDoc, args)
		}
	}
	n, caughtUp := testNode(t)
	home := t.TempDir()
	whole := collectFiles(t, home, 1)
	var files []string
	for path := range whole {
		files = append(files, path)
	}
	dry := importJSON(t, append([]string{"--dry-run"}, files...)...)
	if dry.Sessions != 2 {
		t.Fatalf("dry run: %+v", dry)
	}

	cmd := exec.Command(builtSpine(t), unitArgs[1:]...)
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		config.EnvURL + "=" + os.Getenv(config.EnvURL), config.EnvToken + "=" + os.Getenv(config.EnvToken)}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	want := uint64(dry.Envelopes - dry.Sessions) // a collected session stays open: no end
	deadline := time.Now().Add(spinetest.WaitTimeout)
	for stored(t, n) < want {
		select {
		case err := <-exited:
			t.Fatalf("spine collect exited before collecting (%v): %s", err, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("collected %d envelopes of %d in %s: %s", stored(t, n), want, spinetest.WaitTimeout, stderr.String())
		}
	}
	select {
	case err := <-exited:
		t.Fatalf("spine collect exited once it had collected (%v): a service that exits stops collecting", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Fatalf("spine collect on SIGTERM: %v (want exit 0, or the service manager restarts it): %s", err, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(home, ".config", "spine", "collect-state.json")); err != nil {
		t.Fatalf("the offsets are not under HOME's config dir: %v", err)
	}
	caughtUp()
	if got := stored(t, n); got != want {
		t.Fatalf("stored %d envelopes, want %d", got, want)
	}
	if imp := importJSON(t, files...); imp.Envelopes != dry.Sessions {
		t.Fatalf("import after the service published %d envelopes, want the %d ends alone", imp.Envelopes, dry.Sessions)
	}
}

// systemdExecStart is the unit's ExecStart, split into words, with its
// EnvironmentFile and SPINE_URL checked present.
func systemdExecStart(t *testing.T, doc []byte) []string {
	t.Helper()
	var exec []string
	var envFile, url bool
	for line := range strings.SplitSeq(string(doc), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "ExecStart="):
			exec = strings.Fields(strings.TrimPrefix(line, "ExecStart="))
		case strings.HasPrefix(line, "EnvironmentFile="):
			envFile = true
		case strings.HasPrefix(line, "Environment="+config.EnvURL+"="):
			url = true
		}
	}
	if exec == nil || !envFile || !url {
		t.Fatalf("%s: no systemd unit with ExecStart, EnvironmentFile and Environment=%s", serviceDoc, config.EnvURL)
	}
	return exec
}

var plistString = regexp.MustCompile(`<string>([^<]*)</string>`)

// launchdArguments is the plist's ProgramArguments, the plist checked
// well-formed XML with SPINE_URL and SPINE_TOKEN in its environment.
func launchdArguments(t *testing.T, doc []byte) []string {
	t.Helper()
	start, end := bytes.Index(doc, []byte("<?xml")), bytes.Index(doc, []byte("</plist>"))
	if start < 0 || end < start {
		t.Fatalf("%s: no launchd plist", serviceDoc)
	}
	plist := string(doc[start : end+len("</plist>")])
	d := xml.NewDecoder(strings.NewReader(plist))
	for {
		if _, err := d.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: the plist is not well-formed XML: %v", serviceDoc, err)
		}
	}
	for _, key := range []string{config.EnvURL, config.EnvToken} {
		if !strings.Contains(plist, "<key>"+key+"</key>") {
			t.Fatalf("%s: the plist sets no %s", serviceDoc, key)
		}
	}
	_, args, ok := strings.Cut(plist, "<key>ProgramArguments</key>")
	args, _, _ = strings.Cut(args, "</array>")
	if !ok {
		t.Fatalf("%s: the plist has no ProgramArguments", serviceDoc)
	}
	var out []string
	for _, m := range plistString.FindAllStringSubmatch(args, -1) {
		out = append(out, m[1])
	}
	return out
}
