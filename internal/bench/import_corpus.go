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

// corpusSources are the fixture folders whose JSON-lines files give each
// format's line shapes. Rollouts need a session_meta line so that every
// copy is its own session inside one file.
var corpusSources = map[apps.Format]string{
	apps.FormatClaudeTranscript: "claude-transcripts",
	apps.FormatClaudeStream:     "claude-stream-json",
	apps.FormatCodexExec:        "codex-exec-json",
	apps.FormatCodexRollout:     "codex-rollout",
}

// idKeys are the keys whose string values identify a session, a line, a
// response or a call: each copy of a line gets them with a fresh suffix.
var idKeys = []string{"sessionId", "session_id", "thread_id", "uuid", "parentUuid", "leafUuid", "requestId",
	"request_id", "id", "tool_use_id", "call_id", "parent_tool_use_id"}

// template is one source line split around its ids: a copy is the parts
// joined with "-c<copy>" after each id.
type template struct {
	parts [][]byte
}

// corpusTemplate is one format's lines, in file order, as templates.
type corpusTemplate struct {
	format apps.Format
	lines  []template
	bytes  int64 // one copy's size, newlines included
}

// loadTemplate reads the fixture files of one format (the .jsonl ones,
// sorted) under fixturesDir.
func loadTemplate(fixturesDir string, f apps.Format) (*corpusTemplate, error) {
	files, err := filepath.Glob(filepath.Join(fixturesDir, corpusSources[f], "*.jsonl"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no %s fixtures under %s", f, fixturesDir)
	}
	slices.Sort(files)
	ct := &corpusTemplate{format: f}
	for _, path := range files {
		lines, size, err := fileTemplates(path, f)
		if err != nil {
			return nil, err
		}
		ct.lines, ct.bytes = append(ct.lines, lines...), ct.bytes+size
	}
	if len(ct.lines) == 0 {
		return nil, fmt.Errorf("no %s lines under %s", f, fixturesDir)
	}
	return ct, nil
}

// ids collects the values of idKeys anywhere in v.
func ids(v any, acc []string) []string {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && s != "" && slices.Contains(idKeys, k) {
				acc = append(acc, s)
			}
			acc = ids(e, acc)
		}
	case []any:
		for _, e := range x {
			acc = ids(e, acc)
		}
	}
	return acc
}

// split cuts line after every quoted occurrence of an id (a value, as it
// is written: JSON-escaped), so a suffix can go before the closing quote.
func split(line []byte, idList []string) template {
	var cuts []int
	for _, id := range idList {
		q, _ := json.Marshal(id)
		q = q[:len(q)-1] // `"value` without its closing quote
		for i := 0; ; {
			j := bytes.Index(line[i:], q)
			if j < 0 {
				break
			}
			end := i + j + len(q)
			if end < len(line) && line[end] == '"' {
				cuts = append(cuts, end)
			}
			i = end
		}
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	t := template{}
	prev := 0
	for _, c := range cuts {
		t.parts = append(t.parts, line[prev:c])
		prev = c
	}
	t.parts = append(t.parts, line[prev:])
	return t
}

// writeCorpus writes copies of the template until the file holds at least
// size bytes, each copy with fresh ids, and says how many copies and lines
// it wrote.
func (ct *corpusTemplate) writeCorpus(path string, size int64) (copies, lines int, written int64, err error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, 0, 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var suffix []byte
	for written < size || copies == 0 {
		suffix = append(append(suffix[:0], "-c"...), strconv.Itoa(copies)...)
		for _, t := range ct.lines {
			for i, p := range t.parts {
				if i > 0 {
					w.Write(suffix)
					written += int64(len(suffix))
				}
				w.Write(p)
				written += int64(len(p))
			}
			w.WriteByte('\n')
			written++
			lines++
		}
		copies++
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, 0, 0, err
	}
	return copies, lines, written, f.Close()
}

// corpusName is the file a format's corpus is written to.
func corpusName(dir string, f apps.Format, tag string) string {
	return filepath.Join(dir, strings.Join([]string{string(f), tag}, "-")+".jsonl")
}

// fileTemplates is one fixture file's JSON lines, in order, as templates,
// and their size with newlines. A Codex rollout without session_meta has
// none: its session would be the file's name, every copy one session.
func fileTemplates(path string, f apps.Format) ([]template, int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	if f == apps.FormatCodexRollout && !bytes.Contains(data, []byte(`"session_meta"`)) {
		return nil, 0, nil
	}
	var lines []template
	var size int64
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		var v any
		if len(line) == 0 || json.Unmarshal(line, &v) != nil {
			continue
		}
		lines = append(lines, split(line, ids(v, nil)))
		size += int64(len(line)) + 1
	}
	return lines, size, nil
}
