package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spinehq/spine/streams"
)

// runnerOut is what spine runner shows on its stdout. On a terminal
// (live): every task, live, with its instructions and spine run's
// rendering of the app's run (no hidden remote control). Otherwise (a
// service: the journal, a log file) only the runner's own steps, each
// task's id, how it ended and its receipt: never the instructions or the
// app's prose, which are prompts and transcripts (docs/runner.md#as-a-service).
// With json, the same as JSON lines.
type runnerOut struct{ json, live bool }

// runnerLive says whether stdout is a terminal (tests set it).
var runnerLive = func() bool {
	f, ok := stdout.(*os.File)
	return ok && isTerminal(f)
}

// say shows one of the runner's own steps: a line of text (its control
// characters taken out), or with --json an object {"runner": kind,
// "message": text, …fields}.
func (o *runnerOut) say(kind, text string, fields map[string]any) {
	if !o.json {
		fmt.Fprintln(stdout, shown(text))
		return
	}
	line := map[string]any{"runner": kind, "message": text}
	for k, v := range fields {
		line[k] = v
	}
	data, _ := json.Marshal(line)
	fmt.Fprintf(stdout, "%s\n", data)
}

// envelopes shows a task's run when live: spine run's rendering, its text
// with no control characters, or each envelope as a JSON line as spine
// run --json prints them. Not live, it shows nothing.
func (o *runnerOut) envelopes() func(*streams.Envelope) {
	switch {
	case !o.live:
		return func(*streams.Envelope) {}
	case !o.json:
		show := render(stdout)
		return func(e *streams.Envelope) { show(shownEnvelope(e)) }
	}
	return showJSON(stdout)
}

// shown is s fit for a terminal: control characters other than newline
// and tab taken out (a task's instructions or an app's text could move the
// cursor, erase the line and rewrite the --confirm question: "\r\x1b[2K"),
// as are the bidirectional overrides that reorder what is read, and bytes
// that are not UTF-8.
func shown(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case unicode.IsControl(r), r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == utf8.RuneError:
			return -1
		}
		return r
	}, s)
}

// shownEnvelope is a copy of e with every text the rendering shows made
// fit for a terminal (shown).
func shownEnvelope(e *streams.Envelope) *streams.Envelope {
	c := *e
	c.App, c.SessionID, c.Text, c.Status, c.Model, c.Error = shown(c.App), shown(c.SessionID), shown(c.Text), shown(c.Status),
		shown(c.Model), shown(c.Error)
	if e.Event != nil {
		ev := *e.Event
		ev.Action, ev.Command, ev.Path, ev.URL, ev.Server, ev.Tool = shown(ev.Action), shown(ev.Command), shown(ev.Path),
			shown(ev.URL), shown(ev.Server), shown(ev.Tool)
		c.Event = &ev
	}
	return &c
}

// ask puts a yes/no question to the owner (runnerPrompt) and waits for
// the answer, or for ctx (a Ctrl-C, a cancel or a lost lease does not wait
// for Enter); anything but y or yes, or no answer at all, is no.
func (r *runner) ask(ctx context.Context, question string) bool {
	fmt.Fprint(runnerPrompt, shown(question))
	select {
	case line, ok := <-r.typed():
		if !ok {
			fmt.Fprintln(runnerPrompt)
			return false
		}
		a := strings.ToLower(strings.TrimSpace(line))
		return a == "y" || a == "yes"
	case <-ctx.Done():
		fmt.Fprintln(runnerPrompt)
		return false
	}
}

// typed is the owner's lines, read from runnerAnswers by a goroutine of
// their own (started on the first question), closed at its end.
func (r *runner) typed() <-chan string {
	r.lineOnce.Do(func() {
		r.lines = make(chan string)
		go func() {
			defer close(r.lines)
			for {
				line, err := r.answers.ReadString('\n')
				if err != nil && line == "" {
					return
				}
				r.lines <- line
				if err != nil {
					return
				}
			}
		}()
	})
	return r.lines
}

// runnerPrompt is where --confirm asks (tests set it).
var runnerPrompt io.Writer = os.Stderr
