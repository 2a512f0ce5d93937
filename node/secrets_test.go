package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/gateway"
	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/secretstest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/streams"
)

// splitKey is cut across two stdout chunks; neither piece is a key alone.
const splitKey = "sk-ant-api03-Zk9xV2hQ3mR7tY1uW4pL8nB6cD0eF5gHsplit"

// secretText is every shape, one per line: what each free-text field gets.
func secretText(field string) string { return field + ":\n" + secretstest.All() }

// TestNoSecretReachesStorage is the proof: every shape through every door
// into every free-text field, then the whole database (pg_dump, Library
// blobs decompressed), every file of the JetStream store, the node's log
// and every read API's body are searched; none holds a secret.
func TestNoSecretReachesStorage(t *testing.T) {
	_, dbURL := pgtest.New(t)
	dataDir := t.TempDir()
	logs := &spinetest.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	n, err := node.Start(context.Background(), config.Config{DatabaseURL: dbURL, NATSListen: "off", HTTPAddr: "127.0.0.1:0",
		DataDir: dataDir, TokenSecret: secret, Replicas: 1}, log, &node.Options{BatchSize: 50})
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(n.Stop)
	f := &fixture{t: t, n: n, base: "http://" + n.HTTPAddr(), commits: make(chan struct{}, 1)}
	tok := f.token("o1", "m1")

	pub := streams.NewPublisher(n.JS)
	for k, sh := range secretstest.Shapes {
		code, body := f.do("POST", "/v1/ingest", tok, envelopes(t, sessionEnvelopes(fmt.Sprint("s-http-", k), "w-http", sh.Text)...))
		if code != 202 && code != 207 || !bytes.Contains(body, []byte(`"refused":0`)) {
			t.Fatalf("ingest = %d %s", code, body)
		}
		for _, e := range sessionEnvelopes(fmt.Sprint("s-nats-", k), "w-nats", sh.Text) {
			if _, err := pub.Publish(t.Context(), e, nil); err != nil {
				t.Fatalf("trusted publish %s: %v", e.ID, err)
			}
		}
	}
	refusedShapes(t, f, tok)
	remote := desktopDoors(t, f, tok)
	cancelDoor(t, f, tok)
	telemetryDoors(t, f, tok)
	f.waitCaughtUp()

	needles := []string{splitKey}
	for _, sh := range secretstest.Shapes {
		needles = append(needles, sh.Secret)
	}
	reads := readBodies(t, f, tok, remote)
	places := map[string]string{"pg_dump": pgDump(t, dbURL, "s-http"), "library blobs": libraryBlobs(t, f),
		"dead_letters.data": deadLetterData(t, f)}
	for path, data := range storeFiles(t, filepath.Join(dataDir, "nats")) {
		places["jetstream "+path] = data
	}
	places["log"] = logs.String()
	for name, b := range reads {
		places["GET "+name] = html.UnescapeString(b)
	}
	for place, data := range places {
		for _, needle := range needles {
			if strings.Contains(data, needle) {
				t.Errorf("%s holds %q", place, needle)
			}
		}
	}
	// The pieces of the split key are stored (the documented limit) but
	// no read serves them.
	for name, b := range reads {
		if strings.Contains(b, splitKey[:16]) || strings.Contains(b, splitKey[16:]) {
			t.Errorf("GET %s serves a piece of the split key", name)
		}
	}
	if !strings.Contains(reads["transcript s-http-0"], "curl -H 'Authorization: Bearer [REDACTED]' https://api.example.com/v1") {
		t.Errorf("the transcript lost the text around a secret: %s", reads["transcript s-http-0"])
	}
}

// refusedShapes sends ids and digests that hold a secret: they are not
// free text, so the door refuses them rather than redacting, and the
// refusal does not quote them.
func refusedShapes(t *testing.T, f *fixture, tok string) {
	t.Helper()
	for k, sh := range secretstest.Shapes {
		evs := sessionEnvelopes(fmt.Sprint("s-refused-", k), "w-refused", "")
		byID, byDigest := *evs[1], *evs[1]
		byID.ID, byID.Seq, byID.Stream, byID.Text = byID.ID+"-id", 90, "event", ""
		byID.Event = &streams.Event{Action: "mcp_call", Server: "s", Tool: "t", CallID: sh.Text}
		size := int64(1)
		byDigest.ID, byDigest.Seq, byDigest.Stream, byDigest.Text = byDigest.ID+"-digest", 91, "event", ""
		byDigest.Event = &streams.Event{Action: "file_write", Path: "a", ContentDigest: sh.Text, Size: &size}
		code, body := f.do("POST", "/v1/ingest", tok, envelopes(t, &byID, &byDigest))
		if !bytes.Contains(body, []byte(`"refused":2`)) || bytes.Contains(body, []byte(sh.Secret)) {
			t.Errorf("shape %d: ingest of a secret id and digest = %d %s", k, code, body)
		}
	}
}

// deadLetterData is every dead letter's message: pg_dump shows bytea as
// hex a search cannot read.
func deadLetterData(t *testing.T, f *fixture) string {
	t.Helper()
	rows, err := f.n.Pool.Query(t.Context(), `SELECT data FROM dead_letters`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	if rows.Err() != nil || b.Len() == 0 {
		t.Fatalf("dead letters: %v (%d bytes)", rows.Err(), b.Len())
	}
	return b.String()
}

// sessionEnvelopes is a whole session with secrets in every free-text
// field of every envelope type, and a chunk after the end (a dead letter).
// Fields for text get every shape; short names (bounded to 256 bytes) get
// one, short.
func sessionEnvelopes(id, worker, short string) []*streams.Envelope {
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	env := func(typ, suffix string) *streams.Envelope {
		at = at.Add(time.Millisecond)
		return &streams.Envelope{V: 1, Type: typ, ID: id + "-" + suffix, At: at, SessionID: id}
	}
	start := env(streams.TypeSessionStart, "start")
	start.App, start.Kind, start.WorkerID = "claude-code", "attach", worker
	start.AppSessionRef, start.Workspace, start.Prompt = short, secretText("workspace"), secretText("prompt")
	start.Owner = &streams.Owner{Org: "o1", Member: "m1"}
	out := []*streams.Envelope{start}
	seq := int64(0)
	chunk := func(stream, text string, ev *streams.Event) {
		seq++
		c := env(streams.TypeSessionChunk, fmt.Sprint("c", seq))
		c.Seq, c.Stream, c.Text, c.Event = seq, stream, text, ev
		out = append(out, c)
	}
	chunk("stdout", secretText("stdout"), nil)
	chunk("stderr", secretText("stderr"), nil)
	chunk("stdout", "export KEY="+splitKey[:16], nil)
	chunk("stdout", splitKey[16:]+"\nok\n", nil)
	exit, status := 1, 200
	chunk("event", "", &streams.Event{Action: "command", Command: secretText("command"), ExitCode: &exit, Output: secretText("output")})
	chunk("event", "", &streams.Event{Action: "file_read", Path: "/tmp/" + secretText("path"), Content: secretText("read")})
	chunk("event", "", &streams.Event{Action: "file_write", Path: ".env", Content: secretText("write")})
	chunk("event", "", &streams.Event{Action: "fetch", URL: "https://deploy:Pa55w0rdInUrl9@git.example.com/x", Status: &status, Output: secretText("fetched")})
	chunk("event", "", &streams.Event{Action: "mcp_call", Server: short, Tool: short, CallID: "call-1", Output: secretText("mcp")})
	ctl := env(streams.TypeSessionControl, "ctl")
	ctl.Control, ctl.Reason = "renew_credential", secretText("reason")
	call := env(streams.TypeMCPCall, "mcp")
	dur := int64(5)
	call.CallID, call.Server, call.Tool, call.Status, call.Error, call.DurationMs = "call-2", short, short, "error", secretText("error"), &dur
	end := env(streams.TypeSessionEnd, "end")
	end.Status, end.Error, end.Model, end.Effort = "failed", secretText("error"), short, short
	end.Usage = &streams.Usage{InputTokens: 3, Raw: []byte(fmt.Sprintf(`{"note":%q,"authorization":"Basic dXNlcjpzM2NyM3RQYXNzd29yZA=="}`, secretstest.All()))}
	end.Artifacts = []streams.Artifact{{Name: "notes password=hunter2hunter2", Content: secretText("artifact")}}
	late := env(streams.TypeSessionChunk, "late") // after the end: a dead letter
	late.Seq, late.Stream, late.Text = seq+1, "stdout", secretText("late")
	disc := &streams.Envelope{V: 1, Type: streams.TypeWorkerDisconnect, ID: id + "-disc", At: at.Add(time.Second),
		WorkerID: "other-" + worker, Reason: secretText("disconnect")}
	return append(out, ctl, call, end, late, disc)
}

// cancelDoor starts a session and cancels it with a reason holding every
// shape (POST /v1/sessions/{id}/cancel publishes a session.control).
func cancelDoor(t *testing.T, f *fixture, tok string) {
	t.Helper()
	start := sessionEnvelopes("s-cancel", "w-cancel", "")[0]
	start.AppSessionRef = "ref"
	if code, body := f.do("POST", "/v1/ingest", tok, envelopes(t, start)); !bytes.Contains(body, []byte(`"accepted":1`)) {
		t.Fatalf("ingest start = %d %s", code, body)
	}
	f.waitCaughtUp()
	f.mustDo(202, "POST", "/v1/sessions/s-cancel/cancel", tok, map[string]string{"reason": secretText("cancel")})
}

// remoteDoors are the ids desktopDoors made.
type remoteDoors struct{ http, mcp string }

// desktopDoors drives the runner routes and remote-session create and send
// over HTTP and MCP, each text carrying every shape.
func desktopDoors(t *testing.T, f *fixture, tok string) remoteDoors {
	t.Helper()
	var rt desktop.RunnerToken
	for k, sh := range secretstest.Shapes { // a machine name is short: one shape each
		rt = decode[desktop.RunnerToken](t, f.mustDo(201, "POST", "/v1/desktop-runner/tokens", tok, map[string]string{"runnerId": fmt.Sprint("laptop-", k)}))
		f.mustDo(200, "POST", "/v1/desktop-runner/register", rt.Token, desktop.Inventory{Machine: sh.Text,
			Apps: []string{sh.Text}, Capabilities: []string{desktop.KindRemoteSession}, ProtocolVersion: 1, ExecutionTargets: []string{"desktop"}})
	}
	var sess desktop.Session
	for _, sh := range secretstest.Shapes { // so is a title
		sess = decode[desktop.Session](t, f.mustDo(201, "POST", "/v1/remote-sessions", tok,
			map[string]any{"target": "desktop", "runnerId": rt.RunnerID, "title": sh.Text, "instructions": secretText("instructions")}))
	}
	c := decode[desktop.Claim](t, f.mustDo(200, "POST", "/v1/desktop-runner/tasks/"+sess.LatestTaskID+"/claim", rt.Token, nil))
	task := "/v1/desktop-runner/tasks/" + c.Task.ID
	f.mustDo(200, "POST", task+"/heartbeat", rt.Token, map[string]any{"fence": c.Fence})
	// A local session id must be an app's (a UUID): one holding a secret is
	// refused whole, and the refusal does not echo it.
	for _, sh := range secretstest.Shapes {
		body := f.mustDo(400, "POST", task+"/events", rt.Token, map[string]any{"fence": c.Fence,
			"events": []desktop.RunnerEvent{{Seq: 1, Type: desktop.EventSessionID, SessionID: sh.Text}}})
		if bytes.Contains(body, []byte(sh.Secret)) {
			t.Fatalf("the refusal of a session id echoes its secret: %s", body)
		}
	}
	evs := []desktop.RunnerEvent{{Seq: 1, Type: desktop.EventSessionID, SessionID: "0b7c5a52-4c1e-4f7e-9a55-2f4c1d3e6a10"}}
	for _, sh := range secretstest.Shapes {
		evs = append(evs, desktop.RunnerEvent{Seq: int64(len(evs) + 1), Type: desktop.EventStatus, Status: sh.Text})
	}
	evs = append(evs,
		desktop.RunnerEvent{Seq: int64(len(evs) + 1), Type: desktop.EventAssistantText, Text: secretText("assistant")},
		desktop.RunnerEvent{Seq: int64(len(evs) + 2), Type: desktop.EventUsage, Usage: []byte(fmt.Sprintf(`{"inputTokens":1,"note":%q}`, secretstest.All()))},
		desktop.RunnerEvent{Seq: int64(len(evs) + 3), Type: desktop.EventTerminal, Status: "failed", Error: secretText("terminal")})
	f.mustDo(200, "POST", task+"/events", rt.Token, map[string]any{"fence": c.Fence, "events": evs})
	f.mustDo(200, "POST", task+"/complete", rt.Token, map[string]any{"fence": c.Fence, "status": "done", "error": secretText("complete")})
	f.mustDo(202, "POST", "/v1/remote-sessions/"+sess.ID+"/messages", tok, map[string]string{"prompt": secretText("send")})

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "proof", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: f.base + "/mcp", HTTPClient: &http.Client{Transport: bearerAuth(tok)}}, nil)
	if err != nil {
		t.Fatalf("mcp connect: %v", err)
	}
	defer cs.Close()
	var id string
	for _, sh := range secretstest.Shapes {
		res := callTool(t, cs, "remoteSession.create", map[string]any{"target": "desktop", "title": sh.Text,
			"instructions": secretText("mcp instructions")})
		data, _ := json.Marshal(res.StructuredContent)
		id = decode[struct{ Session desktop.Session }](t, data).Session.ID
	}
	callTool(t, cs, "remoteSession.send", map[string]any{"sessionId": id, "prompt": secretText("mcp send")})
	return remoteDoors{http: sess.ID, mcp: id}
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: gateway.ToolExecute,
		Arguments: map[string]any{"name": name, "arguments": args}})
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %+v", name, err, res)
	}
	return res
}

type bearerAuth string

func (b bearerAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// mustDo sends a JSON body and wants the status.
func (f *fixture) mustDo(want int, method, path, token string, body any) []byte {
	f.t.Helper()
	var data []byte
	if body != nil {
		data = []byte(mustJSON(f.t, body))
	}
	code, out := f.do(method, path, token, data)
	if code != want {
		f.t.Fatalf("%s %s = %d %s, want %d", method, path, code, out, want)
	}
	return out
}

// readBodies is the body of every read API over what the test sent.
func readBodies(t *testing.T, f *fixture, tok string, remote remoteDoors) map[string]string {
	t.Helper()
	out := map[string]string{}
	get := func(name, path string) string {
		code, b := f.do("GET", path, tok, nil)
		if code != 200 {
			t.Errorf("GET %s = %d %s", path, code, b)
		}
		out[name] = string(b)
		return string(b)
	}
	get("sessions", "/v1/sessions")
	for k := range secretstest.Shapes {
		for _, id := range []string{fmt.Sprint("s-http-", k), fmt.Sprint("s-nats-", k)} {
			sess := decode[recorder.Session](t, []byte(get("session "+id, "/v1/sessions/"+id)))
			get("transcript "+id, "/v1/sessions/"+id+"/transcript")
			get("transcript page "+id, "/v1/sessions/"+id+"/transcript?since=3&limit=1")
			get("steps "+id, "/v1/runs/"+recorder.RunID(id)+"/steps")
			get("provenance "+id, "/v1/provenance/"+id)
			if sess.TranscriptFileID != "" {
				get("transcript file "+id, "/v1/library/files/"+sess.TranscriptFileID)
				get("provenance file "+id, "/v1/provenance/"+sess.TranscriptFileID)
			}
		}
	}
	for _, id := range []string{"s-hook", "s-otlp"} { // telemetryDoors'
		get("session "+id, "/v1/sessions/"+id)
		get("steps "+id, "/v1/runs/"+recorder.RunID(id)+"/steps")
	}
	get("cost", "/v1/cost/summary")
	dls := decode[struct{ DeadLetters []streams.DeadLetter }](t, []byte(get("dead letters", "/v1/deadletters")))
	if len(dls.DeadLetters) == 0 {
		t.Error("no dead letter to read: the late chunks should have made two")
	}
	for _, dl := range dls.DeadLetters {
		get(fmt.Sprint("dead letter ", dl.Seq), fmt.Sprintf("/v1/deadletters/%s/%d", dl.Stream, dl.Seq))
	}
	get("remote sessions", "/v1/remote-sessions")
	for _, id := range []string{remote.http, remote.mcp} {
		get("remote session "+id, "/v1/remote-sessions/"+id)
		get("remote page "+id, "/ui/remote/"+id+"?token="+tok)
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// pgDump is the whole test database as SQL text.
func pgDump(t *testing.T, url, marker string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "pg_dump", "--no-owner", "-d", url).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	if !bytes.Contains(out, []byte(marker)) {
		t.Fatal("pg_dump holds none of the test's sessions")
	}
	return string(out)
}

// libraryBlobs is every Library piece, decompressed: pg_dump shows zstd
// pieces as bytes a search cannot read.
func libraryBlobs(t *testing.T, f *fixture) string {
	t.Helper()
	rows, err := f.n.Pool.Query(t.Context(), `SELECT encoding, data FROM library_pieces`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	dec, _ := zstd.NewReader(nil)
	defer dec.Close()
	var b strings.Builder
	for rows.Next() {
		var enc string
		var data []byte
		if err := rows.Scan(&enc, &data); err != nil {
			t.Fatal(err)
		}
		if enc == "zstd" {
			if data, err = dec.DecodeAll(data, nil); err != nil {
				t.Fatal(err)
			}
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	return b.String()
}

// storeFiles is every file under the JetStream store directory.
func storeFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[strings.TrimPrefix(path, dir)] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	blk := 0
	for p, d := range out {
		if strings.HasSuffix(p, ".blk") && strings.Contains(d, "s-http") {
			blk++
		}
	}
	if blk == 0 {
		t.Fatal("no message block of the store holds the test's sessions")
	}
	return out
}

// TestRawProducerSecretsAreRedacted publishes a session straight to
// JetStream, past the door, with a secret in every field the recorder and
// accounting store: the projectors redact what they decode.
func TestRawProducerSecretsAreRedacted(t *testing.T) {
	_, dbURL := pgtest.New(t)
	n, err := node.Start(context.Background(), config.Config{DatabaseURL: dbURL, NATSListen: "off", HTTPAddr: "127.0.0.1:0",
		DataDir: t.TempDir(), TokenSecret: secret, Replicas: 1}, slog.New(slog.DiscardHandler), &node.Options{BatchSize: 50})
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(n.Stop)
	f := &fixture{t: t, n: n, base: "http://" + n.HTTPAddr(), commits: make(chan struct{}, 1)}
	var needles []string
	for k, sh := range secretstest.Shapes {
		id := fmt.Sprint("s-raw-", k)
		envs := sessionEnvelopes(id, "w-raw", sh.Text)
		for _, e := range envs {
			if e.Type == streams.TypeSessionEnd {
				e.Model, e.Effort = sh.Text, sh.Text
				e.Usage.Raw = []byte(fmt.Sprintf(`{"note":%q}`, sh.Text))
			}
			data, _ := json.Marshal(e)
			if _, err := n.JS.Publish(t.Context(), e.Subject(), data); err != nil {
				t.Fatalf("raw publish %s: %v", e.ID, err)
			}
		}
		needles = append(needles, sh.Secret)
	}
	f.waitCaughtUp()
	dump := pgDump(t, dbURL, "s-raw-0")
	for _, needle := range needles {
		if strings.Contains(dump, needle) {
			t.Errorf("pg_dump holds %q", needle)
		}
	}
}

// telemetryDoors sends every shape through the telemetry doors: a hook's
// Bash command and output and a prompt (kept as a digest only), and an
// OTLP export's free-text attributes, one shape each (they are short
// names), in a request the recorder and accounting project.
func telemetryDoors(t *testing.T, f *fixture, tok string) {
	t.Helper()
	hook := func(v map[string]any) {
		v["session_id"] = "s-hook"
		f.mustDo(200, "POST", "/v1/hooks/claude-code", tok, v)
	}
	hook(map[string]any{"hook_event_name": "UserPromptSubmit", "prompt": secretText("prompt")})
	hook(map[string]any{"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "toolu_1",
		"tool_input": map[string]string{"command": secretText("command")}, "tool_response": map[string]string{"stdout": secretText("stdout")}})
	var records []string
	for k, sh := range secretstest.Shapes {
		attr := func(key, v string) string {
			b, _ := json.Marshal(map[string]any{"key": key, "value": map[string]string{"stringValue": v}})
			return string(b)
		}
		common := attr("session.id", "s-otlp") + "," + attr("event.timestamp", "2026-12-01T18:26:08.660Z")
		records = append(records,
			`{"body":{"stringValue":"claude_code.api_request"},"attributes":[`+common+`,`+attr("event.name", "api_request")+`,`+attr("request_id", fmt.Sprint("req_", k))+`,`+
				attr("model", sh.Text)+`,`+attr("effort", sh.Text)+`,`+attr("query_source", sh.Text)+`]}`,
			`{"body":{"stringValue":"claude_code.tool_result"},"attributes":[`+common+`,`+attr("event.name", "tool_result")+`,`+attr("tool_use_id", fmt.Sprint("toolu_otlp_", k))+`,`+
				attr("tool_name", sh.Text)+`,`+attr("error_type", sh.Text)+`]}`)
	}
	body := `{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"claude-code"}}]},` +
		`"scopeLogs":[{"logRecords":[` + strings.Join(records, ",") + `]}]}]}`
	req, _ := http.NewRequest("POST", f.base+"/otlp/v1/logs", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(answer) != "{}" || f.onLog("s-otlp") != 2*len(secretstest.Shapes) {
		t.Fatalf("OTLP export of the shapes: %d %s, %d on the log", resp.StatusCode, answer, f.onLog("s-otlp"))
	}
}
