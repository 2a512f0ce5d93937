package recorder

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// encodingJSON is what renderChunks wrote before appendChunk: the
// standard library's (v1) Encoder, HTML escaping on. Transcripts are
// content-addressed, so these are the bytes appendChunk keeps.
func encodingJSON(c Chunk) []byte {
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(c) // an error writes nothing
	return buf.Bytes()
}

func checkAppendChunk(t *testing.T, c Chunk) {
	t.Helper()
	want := encodingJSON(c)
	got, ok := appendChunk([]byte("kept"), &c)
	if !bytes.HasPrefix(got, []byte("kept")) || !bytes.Equal(got[4:], want) || ok != (len(want) > 0) {
		t.Fatalf("chunk %+v:\n got %q (ok %v)\nwant %q", c, got, ok, want)
	}
}

func TestAppendChunkIsEncodingJSON(t *testing.T) {
	var ascii strings.Builder
	for b := 0; b < 128; b++ {
		ascii.WriteByte(byte(b))
	}
	texts := []string{"", "plain text", ascii.String(), "<script>&amp;</script>", "tab\tnew\nline\r\x00\x1f\x7f",
		"\b\f\v", `quote " back \ slash`, "é ü 日本語 🙂", "\u2028 and \u2029", "\u2027\u202a",
		"bad \xff utf8 \xc3", "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80 past max", string(rune(0xfffd))}
	times := []time.Time{time.Date(2026, 12, 2, 3, 4, 5, 6, time.UTC), {}, time.Unix(0, 0),
		time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", -(3*3600+30*60))),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 6, 1, 0, 0, 0, 0, time.FixedZone("seconds", 30)),
		time.Date(2026, 6, 1, 0, 0, 0, 0, time.FixedZone("a day ahead", 24*3600))}
	seqs := []int64{0, 1, -1, 42, math.MaxInt64, math.MinInt64}
	for i, text := range texts {
		for j, at := range times {
			checkAppendChunk(t, Chunk{Seq: seqs[(i+j)%len(seqs)], Stream: texts[(i+j+1)%len(texts)], Text: text, At: at})
		}
	}
	for _, seq := range seqs {
		checkAppendChunk(t, Chunk{Seq: seq, Stream: "stdout", Text: "x", At: times[0]})
	}
	// A time JSON refuses adds no line, as the Encoder did.
	if _, ok := appendChunk(nil, &Chunk{At: times[6]}); ok {
		t.Fatal("year 10000 rendered")
	}
}

// TestRenderChunksIsEncodingJSON: a transcript is its chunks' lines one after
// another, a chunk whose time JSON refuses left out, after whatever the
// buffer held; lines that outgrow renderChunks' estimate are whole too.
func TestRenderChunksIsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 12, 2, 3, 4, 5, 6, time.UTC)
	chunks := []Chunk{{Seq: 1, Stream: "stdout", Text: "first", At: at},
		{Seq: 2, Stream: "stderr", Text: strings.Repeat("<&>\x00", 4000), At: at},
		{Seq: 3, Stream: "stdout", Text: "year 10000", At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Seq: 4, Stream: "stdout", Text: "last \u2028", At: at.In(time.FixedZone("", -7*3600))}}
	var want bytes.Buffer
	want.WriteString("held")
	for _, c := range chunks {
		want.Write(encodingJSON(c))
	}
	var buf bytes.Buffer
	buf.WriteString("read, held")
	buf.Next(len("read, "))
	renderChunks(&buf, nil, chunks, nil)
	if !bytes.Equal(buf.Bytes(), want.Bytes()) {
		t.Fatalf("rendered %d bytes, the Encoder's %d:\n%.300q\n%.300q", buf.Len(), want.Len(), buf.Bytes(), want.Bytes())
	}
	if n := bytes.Count(buf.Bytes(), []byte("\n")); n != 3 {
		t.Fatalf("%d lines, want 3 (the year 10000 left out)", n)
	}
}

func FuzzAppendChunk(f *testing.F) {
	f.Add(int64(7), "stdout", "hello <world> & \u2028 \xff", int64(1764644645123456789), 0)
	f.Add(int64(-3), "\x00", "\"\\\b\f", int64(0), -210)
	f.Fuzz(func(t *testing.T, seq int64, stream, text string, unixNano int64, offsetMinutes int) {
		zone := time.FixedZone("z", (offsetMinutes%(48*60))*60)
		checkAppendChunk(t, Chunk{Seq: seq, Stream: stream, Text: text, At: time.Unix(0, unixNano).In(zone)})
	})
}

func BenchmarkRenderChunks(b *testing.B) {
	chunks := make([]Chunk, 2000)
	for i := range chunks {
		chunks[i] = Chunk{Seq: int64(i + 1), Stream: "stdout", At: time.Date(2026, 12, 2, 3, 4, 5, i, time.UTC),
			Text: strings.Repeat("some output, \"quoted\" <tags> and a tab\t ", 6)}
	}
	// Rendering alone, without redactAcross: spine's appendChunk beside
	// the Encoder it replaced.
	b.Run("appendChunk", func(b *testing.B) {
		for b.Loop() {
			var dst []byte
			for i := range chunks {
				dst, _ = appendChunk(dst, &chunks[i])
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			for _, c := range chunks {
				_ = enc.Encode(c)
			}
		}
	})
}
