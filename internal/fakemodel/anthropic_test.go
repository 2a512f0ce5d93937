package fakemodel_test

import (
	"bufio"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/fakemodel"
)

// post sends a Messages request as Claude Code does: with the billing
// header as the first system block, a subagent's marked.
func post(t *testing.T, srv *fakemodel.Server, stream, subagent bool) *http.Response {
	t.Helper()
	header := "x-anthropic-billing-header: cc_version=2.1.197; cc_entrypoint=sdk-cli;"
	if subagent {
		header += " cc_is_subagent=true;"
	}
	body, _ := json.Marshal(map[string]any{"model": "claude-test", "stream": stream, "max_tokens": 10,
		"system": []map[string]any{{"type": "text", "text": header}}, "messages": []map[string]any{{"role": "user", "content": "hi"}}})
	resp, err := http.Post(srv.URL()+"/v1/messages?beta=true", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("request-id"), "req_") {
		t.Fatalf("status %d, request-id %q", resp.StatusCode, resp.Header.Get("request-id"))
	}
	return resp
}

// events reads a server-sent event stream: each event's name and data.
func events(t *testing.T, resp *http.Response) (names []string, data []map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			names = append(names, name)
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			var v map[string]any
			if err := json.Unmarshal([]byte(d), &v); err != nil {
				t.Fatalf("data %s: %v", d, err)
			}
			data = append(data, v)
		}
	}
	return names, data
}

// A streamed turn is Anthropic's event sequence with the usage split on
// message_start and message_delta's documented cumulative counts;
// a subagent's turn waits for a subagent's request, which the main
// thread's does not get (it gets the default answer, Turn -1).
func TestMessages(t *testing.T) {
	srv := fakemodel.Start(t)
	u := fakemodel.Usage{Input: 3, Output: 50, CacheRead: 1000, CacheWrite5m: 20, CacheWrite1h: 7}
	srv.Anthropic(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("sub")}, Usage: u, Match: fakemodel.Subagent},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Thinking("hm"), fakemodel.Text("hi"),
			fakemodel.Tool("Bash", map[string]any{"command": "ls"})}, Usage: u, Match: fakemodel.MainThread},
	)
	names, data := events(t, post(t, srv, true, false))
	want := []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop"}
	if !slices.Equal(names, want) {
		t.Fatalf("events %v, want %v", names, want)
	}
	start := data[0]["message"].(map[string]any)["usage"].(map[string]any)
	final := data[len(data)-2]
	usage := final["usage"].(map[string]any)
	split := start["cache_creation"].(map[string]any)
	if start["output_tokens"].(float64) != 1 || start["cache_creation_input_tokens"].(float64) != 27 ||
		split["ephemeral_5m_input_tokens"].(float64) != 20 || split["ephemeral_1h_input_tokens"].(float64) != 7 ||
		start["service_tier"] != "standard" || final["delta"].(map[string]any)["stop_reason"] != "tool_use" {
		t.Fatalf("message_start usage %v, message_delta %v", start, final)
	}
	wantDelta := map[string]any{"input_tokens": 3.0, "cache_read_input_tokens": 1000.0, "cache_creation_input_tokens": 27.0,
		"output_tokens": 50.0}
	if !maps.Equal(usage, wantDelta) {
		t.Fatalf("message_delta usage %v, want %v", usage, wantDelta)
	}
	var whole struct {
		Content []struct{ Type, Text string }
		Usage   struct {
			Output int64 `json:"output_tokens"`
		}
	}
	if err := json.NewDecoder(post(t, srv, false, true).Body).Decode(&whole); err != nil {
		t.Fatal(err)
	}
	if len(whole.Content) != 1 || whole.Content[0].Text != "sub" || whole.Usage.Output != 50 {
		t.Fatalf("the subagent's non-streamed answer: %+v", whole)
	}
	events(t, post(t, srv, true, false)) // no turn left: the default answer
	log := srv.Log()
	if len(log) != 3 || log[0].Turn != 1 || log[1].Turn != 0 || log[1].Thread != fakemodel.ThreadSubagent ||
		log[2].Turn != -1 || len(log[0].Tools) != 1 || log[0].Usage != u {
		t.Fatalf("log %+v", log)
	}
}

// A held turn streams its first HoldAfter blocks, whole, and stops there
// until the test releases it: the client has the first block's stop, and
// not the message's end, while the hold is reached; after Release the
// rest comes. The Responses API holds the same way.
func TestHold(t *testing.T) {
	srv := fakemodel.Start(t)
	hold := fakemodel.NewHold()
	srv.Anthropic(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("before"), fakemodel.Text("after")},
		Hold: hold, HoldAfter: 1})
	names := make(chan string, 64)
	go func() {
		defer close(names)
		sc := bufio.NewScanner(post(t, srv, true, false).Body)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				names <- name
			}
		}
	}()
	var got []string
	for name := range names {
		got = append(got, name)
		if name == "content_block_stop" {
			break
		}
	}
	<-hold.Reached()
	select {
	case name := <-names:
		t.Fatalf("after %v, %q came before the release", got, name)
	case <-time.After(200 * time.Millisecond):
	}
	hold.Release()
	for name := range names {
		got = append(got, name)
	}
	if got[len(got)-1] != "message_stop" || strings.Count(strings.Join(got, " "), "content_block_stop") != 2 {
		t.Fatalf("events %v, want both blocks and the end after the release", got)
	}

	oh := fakemodel.NewHold()
	srv.OpenAI(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("before")}, Hold: oh, HoldAfter: 1})
	done := make(chan []byte, 1)
	go func() {
		resp, err := http.Post(srv.URL()+"/v1/responses", "application/json", strings.NewReader(`{"model":"gpt-test"}`))
		if err != nil {
			done <- nil
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- b
	}()
	<-oh.Reached()
	select {
	case <-done:
		t.Fatal("the held response ended before the release")
	case <-time.After(200 * time.Millisecond):
	}
	oh.Release()
	if b := <-done; !strings.Contains(string(b), "response.completed") {
		t.Fatalf("after the release: %s", b)
	}
}
