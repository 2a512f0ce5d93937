package recorder_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/spine"
	"github.com/spinehq/spine/streams"
)

var ctx = context.Background()

var alice = streams.Owner{Org: "acme", Member: "alice"}

func session(t *testing.T, h *spinetest.Harness, id string) *recorder.Session {
	t.Helper()
	s, err := recorder.GetSession(ctx, h.Pool, alice, id)
	if err != nil {
		t.Fatalf("get session %s: %v", id, err)
	}
	return s
}

func steps(t *testing.T, h *spinetest.Harness, id string) *spine.StepsPage {
	t.Helper()
	p, err := spine.Steps(ctx, h.Pool, recorder.RunID(id), 0, 1000)
	if err != nil {
		t.Fatalf("steps of %s: %v", id, err)
	}
	return p
}

type deadLetter struct{ Subject, Reason, Detail, Data string }

func deadLetters(t *testing.T, h *spinetest.Harness) []deadLetter {
	t.Helper()
	rows, err := h.Pool.Query(ctx, `SELECT subject, reason, detail, encode(data, 'escape') FROM dead_letters ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	var out []deadLetter
	for rows.Next() {
		var d deadLetter
		if err := rows.Scan(&d.Subject, &d.Reason, &d.Detail, &d.Data); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func count(t *testing.T, h *spinetest.Harness, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := h.Pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func decodeMap(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return m
}

func running(t *testing.T) *spinetest.Harness {
	t.Helper()
	h := spinetest.New(t)
	h.StartRecorder(nil)
	return h
}

func endArtifact(name, content string) streams.Artifact {
	return streams.Artifact{Name: name, Content: content}
}

func endArtifact2(name, digest string, size int64) streams.Artifact {
	return streams.Artifact{Name: name, ContentDigest: digest, Size: &size}
}

func repeat(s string, n int) string { return strings.Repeat(s, n) }
