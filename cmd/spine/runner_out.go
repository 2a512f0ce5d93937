package main

import (
	"encoding/json"
	"fmt"
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

// ask puts a yes/no question on the terminal; anything but y or yes, or
// no terminal answer at all, is no.
func (r *runner) ask(question string) bool {
	fmt.Fprint(os.Stderr, question)
	line, err := r.answers.ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(os.Stderr)
		return false
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}
