package collect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/importer"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
)

// api is spine's HTTP API over a real connection, as importer.HTTPSink
// calls it (the CLI has its own client, with retries, in cmd/spine).
type api struct{ base, token string }

type httpError struct {
	status int
	body   string
}

func (e *httpError) Error() string   { return fmt.Sprintf("%d: %s", e.status, e.body) }
func (e *httpError) HTTPStatus() int { return e.status }

func (a api) Do(ctx context.Context, method, path string, body []byte, out any) error {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return &httpError{resp.StatusCode, string(data)}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

func testAPI(t *testing.T) api {
	t.Helper()
	_, url := pgtest.New(t)
	n, err := node.Start(context.Background(), config.Config{DatabaseURL: url, NATSListen: "off", HTTPAddr: "127.0.0.1:0",
		DataDir: t.TempDir(), TokenSecret: strings.Repeat("ab", 32)}, spinetest.Logger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	tok, _ := n.DevToken()
	return api{base: "http://" + n.HTTPAddr(), token: tok}
}

// A collector made anew for every step of a growing transcript (a restart
// each time) sends every envelope once: the sink hears of no duplicate,
// so nothing before a saved offset was sent again.
func TestRestartsSendNothingTwice(t *testing.T) {
	a := testAPI(t)
	home := t.TempDir()
	data, err := os.ReadFile(filepath.Join("..", "..", "shared", "fixtures", "claude-transcripts", "tomjnsn-agentlogs__claudecode_crud.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, "projects", "-w", "8122657c-fe54-4dc9-89a3-20049e8a84f7.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state.json")
	sent := 0
	for i := 1; i <= 4; i++ {
		if err := os.WriteFile(path, data[:len(data)*i/4], 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := New(Options{ClaudeDir: home, StatePath: state, Machine: "m1", Sink: importer.NewHTTPSink(a, 500)})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Once(context.Background()); err != nil {
			t.Fatal(err)
		}
		st := c.Stats()
		if st.Duplicates != 0 {
			t.Fatalf("step %d: %d of %d envelopes sent were duplicates", i, st.Duplicates, st.Sent)
		}
		sent += st.Sent
	}
	if sent == 0 {
		t.Fatal("nothing was sent")
	}
}

// Without file notifications the collector still follows a file, by
// polling: lines written while it runs reach spine.
func TestRunPollsWithoutNotifications(t *testing.T) {
	a := testAPI(t)
	home := t.TempDir()
	data, err := os.ReadFile(filepath.Join("..", "..", "shared", "fixtures", "claude-transcripts", "tomjnsn-agentlogs__claudecode_crud.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{ClaudeDir: home, StatePath: filepath.Join(t.TempDir(), "state.json"), Machine: "m1",
		Sink: importer.NewHTTPSink(a, 500), NoNotify: true, Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	path := filepath.Join(home, "projects", "-w", "8122657c-fe54-4dc9-89a3-20049e8a84f7.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(spinetest.WaitTimeout)
	for {
		var s struct {
			LastSeq int64 `json:"lastSeq"`
		}
		if a.Do(ctx, http.MethodGet, "/v1/sessions/8122657c-fe54-4dc9-89a3-20049e8a84f7", nil, &s) == nil && s.LastSeq > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the file never reached spine by polling")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
