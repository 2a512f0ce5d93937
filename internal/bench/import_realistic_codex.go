package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spinehq/spine/apps"
)

// The realistic shape's Codex sessions are rollouts as Codex keeps them,
// codex/sessions/YYYY/MM/DD/rollout-<time>-<session>.jsonl, of about the
// size of a Claude Code session, each made of rounds of the fixture
// rollouts' lines: one session_meta, then turns (turn_context, the
// messages, reasoning, function calls with their outputs, token_count).

// rolloutDay is the day the fixture rollouts were recorded: the folder
// and the file names their sessions go under.
const rolloutDay = "2026-01-25"

// runningTotal is a token_count's total_token_usage: its fields in the
// fixture's order, their values in the first round and what each round
// adds (the round's last total), so the total grows from round to round
// as a long session's does and every round's responses count.
type runningTotal struct {
	keys       []string
	base, step []int64
}

// write writes the total as of round r and says how many bytes it wrote.
func (t *runningTotal) write(w *bufio.Writer, r int) int64 {
	b := make([]byte, 0, 160)
	b = append(b, '{')
	for i, k := range t.keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, k)
		b = append(b, ':')
		b = strconv.AppendInt(b, t.base[i]+int64(r)*t.step[i], 10)
	}
	b = append(b, '}')
	w.Write(b)
	return int64(len(b))
}

// rolloutHead is what loadRollouts reads of a rollout line.
type rolloutHead struct {
	Type    string `json:"type"`
	Payload struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Info *struct {
			Total json.RawMessage `json:"total_token_usage"`
		} `json:"info"`
	} `json:"payload"`
}

// loadRollouts reads the Codex rollout fixtures under fixturesDir that are
// sessions (a session_meta first, a token_count with its totals after; the
// single-line fixtures are line shapes, which the tiny shape copies): one
// round of their lines, in file order, their session ids made the first
// one's and only its session_meta kept (written once, in round 0), each
// function call's output stretched as Claude's tool results are (what the
// command printed repeated, Codex's header kept once; a command that
// printed nothing given what the file's first command printed), each
// running total carried on from the file before and from round to round.
func loadRollouts(fixturesDir string) ([]realisticLine, error) {
	files, err := filepath.Glob(filepath.Join(fixturesDir, corpusSources[apps.FormatCodexRollout], "*.jsonl"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no Codex rollout fixtures under %s", fixturesDir)
	}
	slices.Sort(files)
	var lines []realisticLine
	var totals []*runningTotal
	carried := map[string]int64{} // the files before's last total, by field
	canonical, n := "", 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		rows, heads := rolloutRows(data)
		if len(heads) == 0 || heads[0].Type != "session_meta" || !slices.ContainsFunc(heads, hasTotal) {
			continue
		}
		sid, filler := heads[0].Payload.ID, execFiller(rows, heads)
		canonical = cmp.Or(canonical, sid)
		last := map[string]int64{}
		for i, line := range rows {
			if heads[i].Type == "session_meta" && (i > 0 || sid != canonical) {
				continue // one session_meta a session
			}
			if sid != canonical {
				line = bytes.ReplaceAll(line, []byte(sid), []byte(canonical))
			}
			n++
			if line, err = stretchFunctionOutput(line, realisticOutputBytes*(1+n%4)/2, filler); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			rl := realisticSplit(line, canonical)
			rl.once = heads[i].Type == "session_meta"
			if hasTotal(heads[i]) && len(rl.parts) == 1 {
				if t := cutTotal(&rl, heads[i].Payload.Info.Total, carried); t != nil {
					totals = append(totals, t)
					for j, k := range t.keys {
						last[k] = t.base[j]
					}
				}
			}
			lines = append(lines, rl)
		}
		if len(last) > 0 {
			carried = last
		}
	}
	if canonical == "" {
		return nil, fmt.Errorf("no Codex rollout session under %s", fixturesDir)
	}
	for _, t := range totals {
		for _, k := range t.keys {
			t.step = append(t.step, carried[k])
		}
	}
	return lines, nil
}

// rolloutRows are data's JSON lines with what loadRollouts reads of each.
func rolloutRows(data []byte) ([][]byte, []rolloutHead) {
	var rows [][]byte
	var heads []rolloutHead
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		var h rolloutHead
		if line = bytes.TrimSpace(line); len(line) == 0 || json.Unmarshal(line, &h) != nil {
			continue
		}
		rows, heads = append(rows, line), append(heads, h)
	}
	return rows, heads
}

func hasTotal(h rolloutHead) bool {
	return h.Type == "event_msg" && h.Payload.Type == "token_count" && h.Payload.Info != nil && len(h.Payload.Info.Total) > 0
}

// cutTotal cuts rl, a line without ids, around its running total raw,
// whose values become the base, plus what the files before carried. A
// total that is not an object of integers is left in the line (nil).
func cutTotal(rl *realisticLine, raw json.RawMessage, carried map[string]int64) *runningTotal {
	line := rl.parts[0]
	at := bytes.Index(line, raw)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	t := &runningTotal{}
	if tok, err := dec.Token(); at < 0 || err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil
		}
		v, err := dec.Token()
		num, ok := v.(json.Number)
		if err != nil || !ok {
			return nil
		}
		i, err := num.Int64()
		if err != nil {
			return nil
		}
		key, _ := k.(string)
		t.keys, t.base = append(t.keys, key), append(t.base, i+carried[key])
	}
	rl.parts = [][]byte{line[:at], line[at+len(raw):]}
	rl.session, rl.total = []bool{false}, t
	return t
}

// execOutput is the mark after which Codex's exec tools write what the
// command printed, after a header of their own (chunk id, wall time, exit
// code, "Original token count").
const execOutput = "\nOutput:\n"

// stretchFunctionOutput makes a function_call_output's output about n
// bytes, repeating its own text (a string, or an object's content, as
// older versions write it). An exec tool's header is kept once, as Codex
// writes it, and only what the command printed is repeated, or filler
// where it printed nothing. Other lines are returned as they are.
func stretchFunctionOutput(line []byte, n int, filler string) ([]byte, error) {
	if !bytes.Contains(line, []byte(`"function_call_output"`)) {
		return line, nil
	}
	m, err := decodeLine(line)
	if err != nil {
		return nil, err
	}
	pl, _ := m["payload"].(map[string]any)
	if pl == nil || pl["type"] != "function_call_output" {
		return line, nil
	}
	switch o := pl["output"].(type) {
	case string:
		pl["output"] = stretchExec(o, n, filler)
	case map[string]any:
		if s, ok := o["content"].(string); ok {
			o["content"] = stretchExec(s, n, filler)
		}
	}
	return encodeLine(m)
}

// stretchExec is stretch on what an exec tool's command printed (filler
// where it printed nothing), its header kept once.
func stretchExec(s string, n int, filler string) string {
	head, body, ok := strings.Cut(s, execOutput)
	if !ok {
		return stretch(s, n)
	}
	return head + execOutput + stretch(cmp.Or(body, filler), n-len(head))
}

// execFiller is the first thing an exec tool's command printed in rows.
func execFiller(rows [][]byte, heads []rolloutHead) string {
	for i, h := range heads {
		if h.Payload.Type != "function_call_output" {
			continue
		}
		var l struct {
			Payload struct {
				Output string `json:"output"`
			} `json:"payload"`
		}
		_ = json.Unmarshal(rows[i], &l)
		if _, body, _ := strings.Cut(l.Payload.Output, execOutput); body != "" {
			return body
		}
	}
	return ""
}

// writeRollout writes Codex session k under root/codex (see
// writeRealistic), of 0.8 to 1.2 times realisticFileBytes as Claude's.
func (rt *realisticTemplate) writeRollout(root string, k int, c *RealisticCorpus, f *RealisticFormatCorpus) error {
	sid, err := sessionID(rt.rollout, k)
	if err != nil {
		return err
	}
	year, month, day := rolloutDay[:4], rolloutDay[5:7], rolloutDay[8:]
	path := filepath.Join(root, "codex", "sessions", year, month, day, "rollout-"+rolloutDay+"T10-32-00-"+sid+".jsonl")
	suffix := "-s" + strconv.Itoa(k)
	n, err := writeRounds(path, rt.rollout, int64(realisticFileBytes)*int64(4+k%3)/5, suffix, suffix)
	if err != nil {
		return err
	}
	c.add(f, n, true)
	return nil
}
