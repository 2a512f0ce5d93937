package bench

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/streams"
)

// fixtureFile is one fixture file's lines as templates: a copy is one
// session (see lagSession).
type fixtureFile struct {
	name   string
	format apps.Format
	lines  []template
}

// loadFixtureFiles reads each .jsonl fixture of the formats under dir,
// one fixtureFile per file, sorted by name, skipping rollouts without a
// session_meta line (their session would be the file's name) and files
// with no JSON line.
func loadFixtureFiles(dir string, formats ...apps.Format) ([]*fixtureFile, error) {
	var out []*fixtureFile
	for _, f := range formats {
		paths, err := filepath.Glob(filepath.Join(dir, corpusSources[f], "*.jsonl"))
		if err != nil {
			return nil, err
		}
		slices.Sort(paths)
		for _, p := range paths {
			ff, err := readFixtureFile(p, f)
			if err != nil {
				return nil, err
			}
			if ff != nil {
				out = append(out, ff)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %v fixtures under %s (pass --fixtures)", formats, dir)
	}
	return out, nil
}

func readFixtureFile(path string, f apps.Format) (*fixtureFile, error) {
	lines, _, err := fileTemplates(path, f)
	if err != nil || len(lines) == 0 {
		return nil, err
	}
	return &fixtureFile{name: filepath.Base(path), format: f, lines: lines}, nil
}

// instance is the template's line with suffix after each id.
func (t template) instance(suffix string) []byte {
	var b bytes.Buffer
	for i, p := range t.parts {
		if i > 0 {
			b.WriteString(suffix)
		}
		b.Write(p)
	}
	return b.Bytes()
}

// lagSession is one copy of a fixture file with fresh ids: its lines, in
// order, and the file the collect phase appends them to.
type lagSession struct {
	format apps.Format
	path   string // collect: the file under the apps' directories; run: the stdout source's name
	lines  [][]byte
	stream *apps.Stream // the prediction's translation of this source
}

// copyOf makes copy n of ff, its ids suffixed "-l<tag><n>".
func copyOf(ff *fixtureFile, tag string, n int) *lagSession {
	suffix := "-l" + tag + strconv.Itoa(n)
	s := &lagSession{format: ff.format}
	for _, t := range ff.lines {
		s.lines = append(s.lines, t.instance(suffix))
	}
	return s
}

// lagEnvelope is what one line's translation published: an envelope id
// and, for a chunk of text (what a transcript read shows), its session
// and seq.
type lagEnvelope struct {
	id      string
	session string
	seq     int64 // > 0: a text chunk, readable in the session's transcript
}

// predictor translates lines the way the collector or spine run will,
// with the same translation (apps.Translator, so the same ids), and says
// which envelopes each line makes: a line is readable once they are.
type predictor struct {
	tr   *apps.Translator
	live bool
	got  []lagEnvelope
}

func newPredictor(live bool) *predictor {
	p := &predictor{live: live}
	p.tr = apps.NewTranslator(apps.Options{Owner: streams.Owner{Org: benchOrg, Member: benchMember}, Sink: p, Live: live})
	return p
}

func (p *predictor) Recorded(context.Context, string) (apps.Recorded, error) {
	return apps.Recorded{}, nil
}

func (p *predictor) Publish(_ context.Context, e *streams.Envelope) error {
	le := lagEnvelope{id: e.ID}
	if e.Type == streams.TypeSessionChunk && e.Stream != "event" && e.Text != "" {
		le.session, le.seq = e.SessionID, e.Seq
	}
	p.got = append(p.got, le)
	return nil
}

// line translates s's line n (from 0) and returns the envelopes it made.
func (p *predictor) line(ctx context.Context, s *lagSession, n int) ([]lagEnvelope, error) {
	if s.stream == nil {
		s.stream = p.tr.Stream(apps.Source{Path: s.path, Format: s.format})
	}
	p.got = nil
	rec := apps.Record{N: n + 1, Data: s.lines[n]}
	if p.live {
		rec.At = time.Now() // as spine run stamps what it reads: the time of a line that has none
	}
	if _, err := s.stream.Record(ctx, rec); err != nil {
		return nil, err
	}
	return p.got, nil
}
