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

// The realistic shape is Claude Code history as it lies on a disk after
// months of use: sessions of about a megabyte whose bytes are mostly long
// tool outputs, a subagent's transcript beside some of them, and some
// sessions saved more than once as copies cut short (each copy a prefix
// of the next). Its envelopes per megabyte are few (about 40, as in real
// history), so what bounds it is not the count of envelopes.
const (
	realisticFileBytes     = 1 << 20   // a session's main file, ±20 % by session
	realisticSubagentBytes = 192 << 10 // a subagent's transcript
	realisticOutputBytes   = 12 << 10  // a tool output, ½× to 2× by line
	realisticProjects      = 8         // project folders the sessions are spread over
	realisticSubagentEvery = 2         // every 2nd session has a subagent
	realisticCopiesEvery   = 3         // every 3rd session is also saved as two prefix copies
)

// realisticLine is one fixture line split around its ids, each cut marked
// when the id before it is the session's.
type realisticLine struct {
	parts   [][]byte
	session []bool // session[i]: the cut before parts[i+1] follows the session id
}

// realisticTemplate is one round of a realistic session: every Claude
// transcript fixture's lines, in file order, their session ids made one
// and their tool outputs stretched; side is the same round as a
// subagent's (isSidechain) lines.
type realisticTemplate struct {
	main, side []realisticLine
}

// RealisticCorpus is what writeRealistic wrote under its root.
type RealisticCorpus struct {
	Files         int   `json:"files"`
	Bytes         int64 `json:"bytes"`
	Sessions      int   `json:"sessions"`
	SubagentFiles int   `json:"subagentFiles"`
	PrefixCopies  int   `json:"prefixCopies"` // files that are a prefix of a session's main file
	// MainFileBytes is the smallest and largest main file.
	MainFileBytes [2]int64 `json:"mainFileBytes"`
}

// loadRealistic reads the Claude transcript fixtures under fixturesDir.
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
	return rt, nil
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
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
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
// bytes: root/projects/<project>/<session>.jsonl, with every
// realisticSubagentEvery-th session's subagent at
// <project>/<session>/subagents/agent-<n>.jsonl as Claude Code keeps it,
// and every realisticCopiesEvery-th session saved again, cut at a third
// and at two thirds, under root/copies-1 and root/copies-2 (read before
// projects, so the import meets the short copies first).
func (rt *realisticTemplate) writeRealistic(root string, size int64) (RealisticCorpus, error) {
	var c RealisticCorpus
	for s := 0; c.Bytes < size || s == 0; s++ {
		project := fmt.Sprintf("-bench-project-%d", s%realisticProjects)
		sid, err := rt.sessionID(s)
		if err != nil {
			return c, err
		}
		mainPath := filepath.Join(root, "projects", project, sid+".jsonl")
		want := int64(realisticFileBytes) * int64(4+s%3) / 5 // 0.8× to 1.2×
		suffix := "-s" + strconv.Itoa(s)
		n, err := writeRounds(mainPath, rt.main, want, suffix, suffix)
		if err != nil {
			return c, err
		}
		c.Files, c.Sessions, c.Bytes = c.Files+1, c.Sessions+1, c.Bytes+n
		if c.MainFileBytes[0] == 0 || n < c.MainFileBytes[0] {
			c.MainFileBytes[0] = n
		}
		c.MainFileBytes[1] = max(c.MainFileBytes[1], n)
		if s%realisticSubagentEvery == 1 {
			sub := filepath.Join(root, "projects", project, sid, "subagents", "agent-"+strconv.Itoa(s)+".jsonl")
			n, err := writeRounds(sub, rt.side, realisticSubagentBytes, suffix, suffix+"a")
			if err != nil {
				return c, err
			}
			c.Files, c.SubagentFiles, c.Bytes = c.Files+1, c.SubagentFiles+1, c.Bytes+n
		}
		if s%realisticCopiesEvery == 2 {
			for j := 1; j <= 2; j++ {
				n, err := writePrefix(mainPath, filepath.Join(root, "copies-"+strconv.Itoa(j), project, sid+".jsonl"), j, 3)
				if err != nil {
					return c, err
				}
				c.Files, c.PrefixCopies, c.Bytes = c.Files+1, c.PrefixCopies+1, c.Bytes+n
			}
		}
	}
	return c, nil
}

// sessionID is session s's id as its lines carry it.
func (rt *realisticTemplate) sessionID(s int) (string, error) {
	for _, l := range rt.main {
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
// sessionSuffix, every other id idSuffix and the round ("r<n>").
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
			for i, p := range l.parts {
				if i > 0 {
					suffix := other
					if l.session[i-1] {
						suffix = sess
					}
					w.Write(suffix)
					written += int64(len(suffix))
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
