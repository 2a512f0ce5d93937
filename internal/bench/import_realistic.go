package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spinehq/spine/apps"
)

// The realistic shape is Claude Code and Codex history as it lies on a
// disk after months of use: sessions of about a megabyte whose bytes are
// mostly long tool outputs; for Claude Code a subagent's transcript beside
// some of them and some sessions saved more than once as copies cut short
// (each copy a prefix of the next); for Codex rollouts under
// sessions/YYYY/MM/DD (see import_realistic_codex.go). Its envelopes per
// megabyte are few (about 40, as in real history), so what bounds it is
// not the count of envelopes.
const (
	realisticFileBytes     = 1 << 20   // a session's main file, ±20 % by session
	realisticSubagentBytes = 192 << 10 // a subagent's transcript
	realisticOutputBytes   = 12 << 10  // a tool output, ½× to 2× by line
	realisticProjects      = 8         // project folders the sessions are spread over
	realisticSubagentEvery = 2         // every 2nd session has a subagent
	realisticCopiesEvery   = 3         // every 3rd session is also saved as two prefix copies
	// DefaultRealisticCodex is the percent of the realistic corpus's
	// sessions that are Codex rollouts.
	DefaultRealisticCodex = 25
)

// realisticLine is one fixture line split around its ids, each cut marked
// when the id before it is the session's.
type realisticLine struct {
	parts   [][]byte
	session []bool // session[i]: the cut before parts[i+1] follows the session id
	// total, on a rollout's token_count, is its running total: the line is
	// parts[0], the total as of the round, parts[1].
	total *runningTotal
	once  bool // written in the first round only (a rollout's session_meta)
}

// realisticTemplate is one round of a realistic session: every Claude
// transcript fixture's lines, in file order, their session ids made one
// and their tool outputs stretched; side is the same round as a
// subagent's (isSidechain) lines; rollout is a Codex session's round
// (loadRollouts).
type realisticTemplate struct {
	main, side, rollout []realisticLine
}

// RealisticCorpus is what writeRealistic wrote under its root.
type RealisticCorpus struct {
	Files         int   `json:"files"`
	Bytes         int64 `json:"bytes"`
	Sessions      int   `json:"sessions"`
	SubagentFiles int   `json:"subagentFiles"`
	PrefixCopies  int   `json:"prefixCopies"` // files that are a prefix of a session's main file
	// MainFileBytes is the smallest and largest main file (a Claude Code
	// session's or a rollout).
	MainFileBytes [2]int64 `json:"mainFileBytes"`
	// CodexShare is the percent of sessions written as Codex rollouts.
	CodexShare int `json:"codexShare"`
	// PerFormat splits the files, bytes and sessions by format, Claude
	// Code's first; a format with no session is left out.
	PerFormat []RealisticFormatCorpus `json:"perFormat"`
}

// RealisticFormatCorpus is one format's part of the realistic corpus.
type RealisticFormatCorpus struct {
	Format   apps.Format `json:"format"`
	Files    int         `json:"files"`
	Bytes    int64       `json:"bytes"`
	Sessions int         `json:"sessions"`
	paths    []string    // the folders that hold its files, in the order they are imported
}

// add counts one file of n bytes, and a session when it is one's main file.
func (c *RealisticCorpus) add(f *RealisticFormatCorpus, n int64, main bool) {
	c.Files, c.Bytes, f.Files, f.Bytes = c.Files+1, c.Bytes+n, f.Files+1, f.Bytes+n
	if !main {
		return
	}
	c.Sessions, f.Sessions = c.Sessions+1, f.Sessions+1
	if c.MainFileBytes[0] == 0 || n < c.MainFileBytes[0] {
		c.MainFileBytes[0] = n
	}
	c.MainFileBytes[1] = max(c.MainFileBytes[1], n)
}

// loadRealistic reads the Claude transcript and Codex rollout fixtures
// under fixturesDir.
func loadRealistic(fixturesDir string) (*realisticTemplate, error) {
	files, err := filepath.Glob(filepath.Join(fixturesDir, corpusSources[apps.FormatClaudeTranscript], "*.jsonl"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no Claude transcript fixtures under %s", fixturesDir)
	}
	slices.Sort(files)
	rt := &realisticTemplate{}
	canonical, n := "", 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			var v map[string]any
			if line = bytes.TrimSpace(line); len(line) == 0 || json.Unmarshal(line, &v) != nil {
				continue
			}
			sid, _ := v["sessionId"].(string)
			if canonical == "" {
				canonical = sid
			}
			if sid != "" && sid != canonical {
				line = bytes.ReplaceAll(line, []byte(sid), []byte(canonical))
			}
			n++
			if line, err = stretchOutputs(line, realisticOutputBytes*(1+n%4)/2); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			rt.main = append(rt.main, realisticSplit(line, canonical))
			if sid == "" {
				continue // a subagent's file holds only its conversation's lines
			}
			side := bytes.ReplaceAll(line, []byte(`"isSidechain":false`), []byte(`"isSidechain":true`))
			rt.side = append(rt.side, realisticSplit(side, canonical))
		}
	}
	if canonical == "" {
		return nil, fmt.Errorf("no Claude transcript session under %s", fixturesDir)
	}
	rollout, err := loadRollouts(fixturesDir)
	rt.rollout = rollout
	return rt, err
}

// realisticSplit is split, each cut marked by whether it follows the
// session id.
func realisticSplit(line []byte, sessionID string) realisticLine {
	var v any
	_ = json.Unmarshal(line, &v)
	t := split(line, ids(v, nil))
	rl := realisticLine{parts: t.parts}
	quoted, _ := json.Marshal(sessionID)
	quoted = quoted[:len(quoted)-1]
	for _, p := range t.parts[:len(t.parts)-1] {
		rl.session = append(rl.session, bytes.HasSuffix(p, quoted))
	}
	return rl
}

// stretchOutputs makes a user line's tool results about n bytes each,
// repeating their own text: the result in message.content and Claude
// Code's copy of it in toolUseResult (stdout, a file's content, text
// blocks). Other lines are returned as they are.
func stretchOutputs(line []byte, n int) ([]byte, error) {
	if !bytes.Contains(line, []byte(`"tool_result"`)) {
		return line, nil
	}
	m, err := decodeLine(line)
	if err != nil {
		return nil, err
	}
	if msg, ok := m["message"].(map[string]any); ok {
		if blocks, ok := msg["content"].([]any); ok {
			for _, b := range blocks {
				if bm, ok := b.(map[string]any); ok && bm["type"] == "tool_result" {
					bm["content"] = stretchValue(bm["content"], n)
				}
			}
		}
	}
	switch r := m["toolUseResult"].(type) {
	case map[string]any:
		if s, ok := r["stdout"].(string); ok {
			r["stdout"] = stretch(s, n)
		}
		if f, ok := r["file"].(map[string]any); ok {
			f["content"] = stretchValue(f["content"], n)
		}
	case nil:
	default:
		m["toolUseResult"] = stretchValue(r, n)
	}
	return encodeLine(m)
}

// decodeLine decodes a JSON object line, keeping its numbers as written.
func decodeLine(line []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var m map[string]any
	return m, dec.Decode(&m)
}

// encodeLine encodes m as one line, without escaping HTML.
func encodeLine(m map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// stretchValue stretches a string, or the text of each text block.
func stretchValue(v any, n int) any {
	switch x := v.(type) {
	case string:
		return stretch(x, n)
	case []any:
		for _, b := range x {
			if bm, ok := b.(map[string]any); ok && bm["type"] == "text" {
				if s, ok := bm["text"].(string); ok {
					bm["text"] = stretch(s, n)
				}
			}
		}
	}
	return v
}

// stretch repeats s, a line each, until it holds at least n bytes.
func stretch(s string, n int) string {
	if s == "" || len(s) >= n {
		return s
	}
	return strings.Repeat(s+"\n", n/(len(s)+1)+1)
}

// writeRealistic writes sessions under root until they hold at least size
// bytes, codexShare percent of them Codex rollouts (writeRollout; every
// 100/codexShare-th session when it divides 100) and the others Claude
// Code's: root/projects/<project>/<session>.jsonl, with every
// realisticSubagentEvery-th Claude session's subagent at
// <project>/<session>/subagents/agent-<n>.jsonl as Claude Code keeps it,
// and every realisticCopiesEvery-th saved again, cut at a third and at two
// thirds, under root/copies-1 and root/copies-2 (read before projects, so
// the import meets the short copies first). Claude sessions are numbered
// apart from Codex's, so with codexShare 0 the corpus is the Claude-only
// one of before.
func (rt *realisticTemplate) writeRealistic(root string, size int64, codexShare int) (RealisticCorpus, error) {
	c := RealisticCorpus{CodexShare: codexShare}
	claude := &RealisticFormatCorpus{Format: apps.FormatClaudeTranscript}
	codex := &RealisticFormatCorpus{Format: apps.FormatCodexRollout}
	for s := 0; c.Bytes < size || s == 0; s++ {
		var err error
		if (s+1)*codexShare/100 > s*codexShare/100 {
			err = rt.writeRollout(root, codex.Sessions, &c, codex)
		} else {
			err = rt.writeClaude(root, claude.Sessions, &c, claude)
		}
		if err != nil {
			return c, err
		}
	}
	for _, dir := range []string{"copies-1", "copies-2", "projects"} {
		if _, err := os.Stat(filepath.Join(root, dir)); err == nil {
			claude.paths = append(claude.paths, filepath.Join(root, dir))
		}
	}
	codex.paths = []string{filepath.Join(root, "codex")}
	for _, f := range []*RealisticFormatCorpus{claude, codex} {
		if f.Sessions > 0 {
			c.PerFormat = append(c.PerFormat, *f)
		}
	}
	return c, nil
}

// writeClaude writes Claude session s (see writeRealistic).
func (rt *realisticTemplate) writeClaude(root string, s int, c *RealisticCorpus, f *RealisticFormatCorpus) error {
	project := fmt.Sprintf("-bench-project-%d", s%realisticProjects)
	sid, err := sessionID(rt.main, s)
	if err != nil {
		return err
	}
	mainPath := filepath.Join(root, "projects", project, sid+".jsonl")
	want := int64(realisticFileBytes) * int64(4+s%3) / 5 // 0.8× to 1.2×
	suffix := "-s" + strconv.Itoa(s)
	n, err := writeRounds(mainPath, rt.main, want, suffix, suffix)
	if err != nil {
		return err
	}
	c.add(f, n, true)
	if s%realisticSubagentEvery == 1 {
		sub := filepath.Join(root, "projects", project, sid, "subagents", "agent-"+strconv.Itoa(s)+".jsonl")
		n, err := writeRounds(sub, rt.side, realisticSubagentBytes, suffix, suffix+"a")
		if err != nil {
			return err
		}
		c.add(f, n, false)
		c.SubagentFiles++
	}
	if s%realisticCopiesEvery == 2 {
		for j := 1; j <= 2; j++ {
			n, err := writePrefix(mainPath, filepath.Join(root, "copies-"+strconv.Itoa(j), project, sid+".jsonl"), j, 3)
			if err != nil {
				return err
			}
			c.add(f, n, false)
			c.PrefixCopies++
		}
	}
	return nil
}

// sessionID is session s's id as lines carry it.
func sessionID(lines []realisticLine, s int) (string, error) {
	for _, l := range lines {
		for i, isSession := range l.session {
			if isSession {
				p := l.parts[i]
				return string(p[bytes.LastIndexByte(p, '"')+1:]) + "-s" + strconv.Itoa(s), nil
			}
		}
	}
	return "", fmt.Errorf("no session id in the realistic template")
}

// writeRounds writes rounds of lines to path until it holds at least want
// bytes (stopping after the line that gets there): the session id gets
// sessionSuffix, every other id idSuffix and the round ("r<n>"), a running
// total its value as of the round; a line marked once is in round 0 only.
func writeRounds(path string, lines []realisticLine, want int64, sessionSuffix, idSuffix string) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var written int64
	var other []byte
	sess := []byte(sessionSuffix)
	for r := 0; written < want; r++ {
		other = append(append(other[:0], idSuffix...), "r"+strconv.Itoa(r)...)
		for _, l := range lines {
			if l.once && r > 0 {
				continue
			}
			for i, p := range l.parts {
				switch {
				case i == 0:
				case l.total != nil:
					written += l.total.write(w, r)
				case l.session[i-1]:
					w.Write(sess)
					written += int64(len(sess))
				default:
					w.Write(other)
					written += int64(len(other))
				}
				w.Write(p)
				written += int64(len(p))
			}
			w.WriteByte('\n')
			if written++; written >= want {
				break
			}
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	return written, f.Close()
}

// writePrefix copies the first num/den of src's bytes to dst, cut after a
// whole line.
func writePrefix(src, dst string, num, den int) (int64, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return 0, err
	}
	cut := len(data) * num / den
	if i := bytes.IndexByte(data[cut:], '\n'); i >= 0 {
		cut += i + 1
	} else {
		cut = len(data)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	return int64(cut), os.WriteFile(dst, data[:cut], 0o644)
}

// realisticFiles lists the corpus's files, in the order the importer
// reads them.
func realisticFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	slices.Sort(files)
	return files, err
}
