package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spinehq/spine/streams"
)

// runnerOut is what spine runner shows on its terminal: every task, live,
// with spine run's rendering (no hidden remote control), or, with --json,
// the same as JSON lines.
type runnerOut struct{ json bool }

// say shows one of the runner's own steps: a line of text, or with --json
// an object {"runner": kind, "message": text, …fields}.
func (o *runnerOut) say(kind, text string, fields map[string]any) {
	if !o.json {
		fmt.Fprintln(stdout, text)
		return
	}
	line := map[string]any{"runner": kind, "message": text}
	for k, v := range fields {
		line[k] = v
	}
	data, _ := json.Marshal(line)
	fmt.Fprintf(stdout, "%s\n", data)
}

// envelopes shows a task's run: spine run's rendering, or each envelope
// as a JSON line as spine run --json prints them.
func (o *runnerOut) envelopes() func(*streams.Envelope) {
	if !o.json {
		return render(stdout)
	}
	return func(e *streams.Envelope) {
		c := *e
		c.Owner = nil
		if data, err := c.Marshal(); err == nil {
			fmt.Fprintf(stdout, "%s\n", data)
		}
	}
}

// ask puts a yes/no question to the owner (runnerPrompt) and waits for
// the answer, or for ctx (a Ctrl-C, a cancel or a lost lease does not wait
// for Enter); anything but y or yes, or no answer at all, is no.
func (r *runner) ask(ctx context.Context, question string) bool {
	fmt.Fprint(runnerPrompt, question)
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
