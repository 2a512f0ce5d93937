package telemetry_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spinehq/spine/streams"
	"github.com/spinehq/spine/telemetry"
	"google.golang.org/protobuf/proto"
)

var update = flag.Bool("update", false, "rewrite testdata/fuzz from the captures (fuzzSeeds)")

// maxSeed bounds a seed: a larger capture (Codex's metrics) would slow
// every fuzzing run for no new shape.
const maxSeed = 64 << 10

// seed is one fuzz input: a body and whether it is JSON.
type seed struct {
	body []byte
	json bool
}

// fuzzSeeds are a signal's seeds by file name: the first capture of each
// case under maxSeed, decompressed, and the leniencies no capture shows.
func fuzzSeeds(t *testing.T, signal string) map[string]seed {
	seeds := map[string]seed{}
	for _, c := range captures(t, "") {
		if c.signal() == signal && firstCapture.MatchString(c.File) && len(c.body) <= maxSeed {
			seeds[strings.TrimSuffix(c.File, ".gz")] = seed{c.body, c.format == telemetry.JSON}
		}
	}
	for name, body := range lenientSeeds[signal] {
		seeds[name] = seed{[]byte(body), true}
	}
	return seeds
}

// firstCapture names a case's first capture of a signal.
var firstCapture = regexp.MustCompile(`-1\.(json|pb)(\.gz)?$`)

// lenientSeeds: bodies in the forms real exporters send that the spec's
// JSON does not allow, and none of the captures shows.
var lenientSeeds = map[string]map[string]string{
	"logs": {
		"lenient-logs.json": `{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"0","body":null,` +
			`"eventName":"event otel/src/lib.rs:1","traceId":"3318e2cb460498ef0d7e47a457cb5551","spanId":"Azna0mu3wlg=",` +
			`"attributes":[{"key":"cost_usd","value":{"doubleValue":{}}},{"key":"success","value":{"boolValue":"true"}},` +
			`{"key":"input_tokens","value":{"intValue":12}}]}]}]}]}`,
	},
	"metrics": {
		"lenient-metrics.json": `{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"m","sum":{"aggregationTemporality":1,` +
			`"dataPoints":[{"asDouble":{},"startTimeUnixNano":1,"exemplars":[{"traceId":"3318e2cb460498ef0d7e47a457cb5551"}]}]}}]}]}]}`,
	},
}

// decoder is DecodeLogs or DecodeMetrics, as one type.
type decoder func([]byte, telemetry.Format) (proto.Message, error)

func decodeLogsMessage(b []byte, f telemetry.Format) (proto.Message, error) {
	return telemetry.DecodeLogs(b, f)
}

func decodeMetricsMessage(b []byte, f telemetry.Format) (proto.Message, error) {
	return telemetry.DecodeMetrics(b, f)
}

// FuzzDecodeLogs: no body makes DecodeLogs, Events or Translate panic or
// fail with anything but ErrMalformed, what decodes survives a protobuf
// round trip unchanged, and what an event translates to is an envelope
// spine takes once it has an owner, unless a field is over its bound.
func FuzzDecodeLogs(f *testing.F) {
	fuzzDecoder(f, func(b []byte, fm telemetry.Format) (proto.Message, error) {
		d, err := telemetry.DecodeLogs(b, fm)
		if err == nil {
			for _, e := range telemetry.Events(d) {
				if err := checkTranslates(e); err != nil {
					return nil, err
				}
			}
		}
		return d, err
	}, decodeLogsMessage)
}

// errTranslate is a translation FuzzDecodeLogs does not allow.
var errTranslate = errors.New("translate")

// checkTranslates: e translates without panicking to nothing, a refusal,
// or an envelope that validates but for a field over its bound.
func checkTranslates(e telemetry.Event) error {
	env, err := telemetry.Translate(e, received)
	switch {
	case err != nil && err != telemetry.ErrUnknownApp && err != telemetry.ErrNoSession:
		return fmt.Errorf("%w: %v", errTranslate, err)
	case env == nil:
		return nil
	}
	env.Owner = &streams.Owner{Org: "acme", Member: "ada"}
	if err := env.Validate(); err != nil {
		if rej, ok := streams.AsRejection(err); !ok || rej.Reason != streams.ReasonFieldTooLong {
			return fmt.Errorf("%w: %s does not validate: %v", errTranslate, e.Name, err)
		}
	}
	return nil
}

// FuzzDecodeMetrics is FuzzDecodeLogs for DecodeMetrics.
func FuzzDecodeMetrics(f *testing.F) {
	fuzzDecoder(f, decodeMetricsMessage, decodeMetricsMessage)
}

func fuzzDecoder(f *testing.F, decode, again decoder) {
	f.Fuzz(func(t *testing.T, body []byte, isJSON bool) {
		fm := telemetry.Protobuf
		if isJSON {
			fm = telemetry.JSON
		}
		m, err := decode(body, fm)
		if err != nil {
			if errors.Is(err, errTranslate) || !errors.Is(err, telemetry.ErrMalformed) {
				t.Fatalf("error wraps no ErrMalformed: %v", err)
			}
			return
		}
		checkRoundTrip(t, m, again)
	})
}

var deterministic = proto.MarshalOptions{Deterministic: true}

// checkRoundTrip: m encoded and decoded as protobuf encodes the same.
func checkRoundTrip(t *testing.T, m proto.Message, decode decoder) {
	b, err := deterministic.Marshal(m)
	if err != nil {
		t.Fatalf("a decoded message does not encode: %v", err)
	}
	m2, err := decode(b, telemetry.Protobuf)
	if err != nil {
		t.Fatalf("a decoded message, encoded, does not decode: %v", err)
	}
	b2, err := deterministic.Marshal(m2)
	if err != nil || !bytes.Equal(b, b2) {
		t.Fatalf("the protobuf round trip changed the message (%v)", err)
	}
}

// corpus is where a fuzz target's seeds are.
func corpus(target string) string { return filepath.Join("testdata", "fuzz", target) }

// TestFuzzCorpus keeps testdata/fuzz equal to fuzzSeeds, and each seed a
// body the decoders take. Run with -update after the captures change.
func TestFuzzCorpus(t *testing.T) {
	for target, signal := range map[string]string{"FuzzDecodeLogs": "logs", "FuzzDecodeMetrics": "metrics"} {
		seeds := fuzzSeeds(t, signal)
		if *update {
			writeCorpus(t, corpus(target), seeds)
		}
		names, err := os.ReadDir(corpus(target))
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != len(seeds) {
			t.Fatalf("%s holds %d seeds, want %d: run go test ./telemetry -run TestFuzzCorpus -update", corpus(target), len(names), len(seeds))
		}
		for name, s := range seeds {
			if _, err := decoders[signal](s.body, formatOf(s)); err != nil {
				t.Fatalf("seed %s does not decode: %v (%v)", name, err, errors.Unwrap(err))
			}
			got, err := os.ReadFile(filepath.Join(corpus(target), name))
			if err != nil || string(got) != corpusFile(s) {
				t.Fatalf("%s/%s is stale or missing (%v): run go test ./telemetry -run TestFuzzCorpus -update", corpus(target), name, err)
			}
		}
	}
}

var decoders = map[string]decoder{"logs": decodeLogsMessage, "metrics": decodeMetricsMessage}

func formatOf(s seed) telemetry.Format {
	if s.json {
		return telemetry.JSON
	}
	return telemetry.Protobuf
}

// corpusFile is a seed in go test's corpus encoding.
func corpusFile(s seed) string {
	return fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nbool(%v)\n", s.body, s.json)
}

// writeCorpus replaces dir's files with seeds.
func writeCorpus(t *testing.T, dir string, seeds map[string]seed) {
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(seeds)) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(corpusFile(seeds[name])), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
