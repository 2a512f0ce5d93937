package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/gateway"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/server"
	"github.com/spinehq/spine/streams"
)

func TestMain(m *testing.M) { spinetest.Main(m) }

type env struct {
	t      *testing.T
	svc    *desktop.Service
	signer *auth.Signer
	base   string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	h := spinetest.New(t)
	signer, _ := auth.NewSigner(bytes.Repeat([]byte{9}, 32))
	svc, err := desktop.New(desktop.Config{Pool: h.Pool, JS: h.JS, NC: h.NC, Signer: signer, SweepInterval: -1,
		Logger: spinetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	p, err := streams.NewProjector(streams.ProjectorConfig{Name: desktop.ProjectorName, Stream: streams.StreamTasks,
		Filter: desktop.Subjects(), Handler: desktop.Projection{}, Pool: h.Pool, JS: h.JS, Logger: spinetest.Logger(t),
		OnCommit: svc.Committed})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	api := server.New(server.Config{Pool: h.Pool, Signer: signer, Desktop: svc, Logger: spinetest.Logger(t),
		MCP: gateway.New(gateway.Config{Desktop: svc, Signer: signer, Logger: spinetest.Logger(t)})})
	srv := httptest.NewUnstartedServer(api)
	srv.Config.RegisterOnShutdown(svc.CloseStreams)
	srv.Start()
	t.Cleanup(srv.Close)
	svc.SetBaseURL(srv.URL)
	return &env{t: t, svc: svc, signer: signer, base: srv.URL}
}

func (e *env) token(org, member, aud string) string {
	tok, err := e.signer.Mint(auth.Claims{Org: org, Member: member, Audience: aud}, time.Hour)
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

// bearer adds a token to every request of an MCP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func (e *env) connect(token string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "spine-test", Version: "1"}, nil)
	return c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
}

func (e *env) execute(cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	e.t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: gateway.ToolExecute,
		Arguments: map[string]any{"name": name, "arguments": args}})
	if err != nil {
		e.t.Fatalf("execute %s: %v", name, err)
	}
	return res
}

func structured[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	data, _ := json.Marshal(res.StructuredContent)
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("structured content %s: %v", data, err)
	}
	return v
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// The official Go SDK client sees exactly two tools and runs
// remoteSession.create → read through them; create carries its card.
func TestMCPTwoToolsCreateRead(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	owner := streams.Owner{Org: "acme", Member: "alice"}
	rt, err := e.svc.MintRunnerToken(ctx, owner, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	id, err := e.svc.VerifyRunner(ctx, rt.Token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Register(ctx, id, desktop.Inventory{Machine: "alice-laptop", Capabilities: []string{desktop.KindRemoteSession},
		ProtocolVersion: 1}); err != nil {
		t.Fatal(err)
	}
	cs, err := e.connect(e.token("acme", "alice", ""))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.Name == gateway.ToolExecute {
			ui, _ := tl.Meta["ui"].(map[string]any)
			if ui["resourceUri"] != gateway.CardURI {
				t.Errorf("execute_capability _meta = %v", tl.Meta)
			}
		}
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "execute_capability,search_capabilities" {
		t.Fatalf("tools = %v, want exactly the two", names)
	}

	found, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: gateway.ToolSearch, Arguments: map[string]any{"query": "remote session create"}})
	if err != nil {
		t.Fatal(err)
	}
	caps := structured[struct{ Capabilities []gateway.Capability }](t, found).Capabilities
	if len(caps) == 0 || caps[0].Name != "remoteSession.create" || caps[0].Arguments["type"] != "object" {
		t.Fatalf("search = %+v", caps)
	}

	res := e.execute(cs, "remoteSession.create", map[string]any{"target": "desktop", "title": "tidy imports", "instructions": "go run goimports"})
	if res.IsError {
		t.Fatalf("create = %s", text(res))
	}
	sess := structured[struct{ Session desktop.Session }](t, res).Session
	ui, _ := res.Meta["ui"].(map[string]any)
	if sess.State != desktop.StateQueued || ui["resourceUri"] != gateway.SessionCardURI(sess.ID) ||
		!strings.Contains(text(res), "tidy imports") || !strings.Contains(text(res), "open: "+e.base+"/ui/remote/"+sess.ID) {
		t.Fatalf("create result = %+v meta %v text %q", sess, res.Meta, text(res))
	}
	card, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: gateway.SessionCardURI(sess.ID)})
	if err != nil {
		t.Fatal(err)
	}
	if c := card.Contents[0]; c.MIMEType != gateway.CardMIMEType || !strings.Contains(c.Text, "tidy imports") ||
		!strings.Contains(c.Text, "queued") || !strings.Contains(c.Text, "/ui/remote/"+sess.ID) {
		t.Fatalf("card = %+v", c)
	}
	generic, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: gateway.CardURI})
	if err != nil || generic.Contents[0].MIMEType != gateway.CardMIMEType {
		t.Fatalf("generic card = %+v, %v", generic, err)
	}

	// The runner posts; read over MCP sees it.
	c, err := e.svc.Claim(ctx, id, sess.LatestTaskID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.PostEvents(ctx, id, sess.LatestTaskID, c.Fence, []desktop.RunnerEvent{{Seq: 1, Type: desktop.EventAssistantText, Text: "imports tidied"}}); err != nil {
		t.Fatal(err)
	}
	read := structured[desktop.ReadResult](t, e.execute(cs, "remoteSession.read", map[string]any{"sessionId": sess.ID, "since": 0}))
	if read.Session.State != desktop.StateRunning || len(read.Entries) != 2 || read.Entries[1].Text != "imports tidied" || read.Next == "0" || read.More {
		t.Fatalf("read = %+v", read)
	}
	// The cursor goes on from there: nothing new yet; a bad one is a tool error.
	again := structured[desktop.ReadResult](t, e.execute(cs, "remoteSession.read", map[string]any{"sessionId": sess.ID, "since": read.Next}))
	if len(again.Entries) != 0 || again.Next != read.Next {
		t.Fatalf("read on = %+v", again)
	}
	if bad := e.execute(cs, "remoteSession.read", map[string]any{"sessionId": sess.ID, "since": "c1.garbage"}); !bad.IsError {
		t.Fatalf("read with a bad cursor = %s", text(bad))
	}
	send := e.execute(cs, "remoteSession.send", map[string]any{"sessionId": sess.ID, "prompt": "and commit"})
	if sent := structured[map[string]any](t, send); send.IsError || sent["state"] != "accepted" || sent["messageId"] == "" {
		t.Fatalf("send = %s", text(send))
	}
	list := structured[desktop.ListResult](t, e.execute(cs, "remoteSession.list", map[string]any{}))
	if len(list.Sessions) != 1 || len(list.Runners) != 1 || !list.Runners[0].Present {
		t.Fatalf("list = %+v", list)
	}
}

// Unknown capabilities, other members' sessions, no runner, bad tokens.
func TestMCPErrors(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cs, err := e.connect(e.token("acme", "alice", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res := e.execute(cs, "remoteSession.mint_runner_token", map[string]any{})
	if !res.IsError || !strings.HasPrefix(text(res), "unknown_capability") {
		t.Fatalf("unknown capability = %s", text(res))
	}
	res = e.execute(cs, "remoteSession.create", map[string]any{"target": "desktop", "instructions": "x"})
	body := structured[map[string]map[string]string](t, res)["error"]
	if !res.IsError || body["code"] != "needs_desktop_runner" || !strings.Contains(body["action"], "`spine runner login`") {
		t.Fatalf("create with no runner = %s", text(res))
	}
	queued := structured[struct{ Session desktop.Session }](t, e.execute(cs, "remoteSession.create",
		map[string]any{"target": "desktop", "instructions": "x", "deliverBy": time.Now().Add(time.Hour)})).Session
	bob, err := e.connect(e.token("acme", "bob", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	theirs := e.execute(bob, "remoteSession.read", map[string]any{"sessionId": queued.ID})
	missing := e.execute(bob, "remoteSession.read", map[string]any{"sessionId": "rs-nope"})
	if !theirs.IsError || text(theirs) != text(missing) || !strings.HasPrefix(text(theirs), "unknown_session") {
		t.Fatalf("bob reads alice's session: %q vs %q", text(theirs), text(missing))
	}
	if _, err := bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: gateway.SessionCardURI(queued.ID)}); err == nil {
		t.Fatal("bob reads alice's card")
	}
	for name, tok := range map[string]string{"none": "", "runner": e.token("acme", "alice", desktop.AudienceRunner)} {
		req, _ := http.NewRequest("POST", e.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("%s token on /mcp = %d", name, resp.StatusCode)
		}
	}
}
