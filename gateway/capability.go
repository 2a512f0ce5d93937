package gateway

import (
	"context"
	"encoding/json"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/streams"
)

// Capability is one thing an agent can do through execute_capability.
type Capability struct {
	Name      string         `json:"name"`
	Summary   string         `json:"summary"`
	Arguments map[string]any `json:"arguments"` // JSON Schema of the arguments object
	run       func(ctx context.Context, c *call) (*mcp.CallToolResult, error)
}

// call is one execution: who asks and with what.
type call struct {
	g     *Gateway
	owner streams.Owner
	args  json.RawMessage
}

func object(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

// capabilities is the registry, in name order.
func (g *Gateway) capabilities() []Capability {
	caps := []Capability{{
		Name: "remoteSession.create",
		Summary: "Start a session on the member's own desktop (target \"desktop\"): its spine runner runs the instructions as a visible local session (Claude Code or Codex). " +
			"Defaults to the most recently seen machine; runnerId pins one (see remoteSession.list). With no desktop online it answers the human step, unless deliverBy queues it until then.",
		Arguments: object(map[string]any{
			"target":       map[string]any{"type": "string", "enum": []string{"desktop"}},
			"title":        str("a short title shown on the desktop and the session page"),
			"instructions": str("what the desktop session should do (the first prompt)"),
			"runnerId":     str("pin one machine, from remoteSession.list"),
			"deliverBy":    map[string]any{"type": "string", "format": "date-time", "description": "queue until this time if no desktop is online; expires after"},
			"app":          map[string]any{"type": "string", "enum": []string{desktop.AppClaudeCode, desktop.AppCodex}, "description": "the app the task needs; a runner whose owner does not allow it refuses the task"},
			"workspace":    str("the directory on the desktop the task works in; a runner whose owner does not allow it refuses the task"),
		}, "target", "instructions"),
		run: runCreate,
	}, {
		Name:      "remoteSession.send",
		Summary:   "Send a follow-up prompt to a remote session; it runs in the same local session on the machine that holds it. Returns a receipt {messageId, state: accepted}.",
		Arguments: object(map[string]any{"sessionId": str("from remoteSession.create or list"), "prompt": str("the follow-up")}, "sessionId", "prompt"),
		run:       runSend,
	}, {
		Name:    "remoteSession.read",
		Summary: "Read a remote session's status and its transcript after a cursor: each task's prompt, the app session the desktop recorded for it (stdout, stderr, events), and how the task ended (done, refused or failed with the reason, ...). Poll with since = the last next until ended.",
		Arguments: object(map[string]any{"sessionId": str("the remote session"),
			"since": map[string]any{"type": []string{"string", "integer"}, "description": "cursor: the next (an opaque string) of the previous read; 0 or absent from the start"},
			"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": desktop.MaxReadLimit}}, "sessionId"),
		run: runRead,
	}, {
		Name:      "remoteSession.list",
		Summary:   "List the member's remote sessions and the presence of each desktop machine (runnerId, machine, last seen, present).",
		Arguments: object(map[string]any{"target": map[string]any{"type": "string", "enum": []string{"desktop"}}}),
		run:       runList,
	}, {
		Name:      "remoteSession.cancel",
		Summary:   "Cancel the running or queued work of a remote session; the desktop learns of it on its next heartbeat.",
		Arguments: object(map[string]any{"sessionId": str("the remote session")}, "sessionId"),
		run:       runCancel,
	}}
	sort.Slice(caps, func(i, j int) bool { return caps[i].Name < caps[j].Name })
	return caps
}

// search scores capabilities against the query's words: a word in the name
// counts 3, in the summary 1. An empty query lists them all.
func search(caps []Capability, query string, limit int) []Capability {
	words := strings.Fields(strings.ToLower(strings.NewReplacer(".", " ", "_", " ").Replace(query)))
	type scored struct {
		c Capability
		n int
	}
	var hits []scored
	for _, c := range caps {
		n := 0
		name, summary := strings.ToLower(c.Name), strings.ToLower(c.Summary)
		for _, w := range words {
			if strings.Contains(name, w) {
				n += 3
			} else if strings.Contains(summary, w) {
				n++
			}
		}
		if n > 0 || len(words) == 0 {
			hits = append(hits, scored{c, n})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].n > hits[j].n })
	out := []Capability{}
	for i := 0; i < len(hits) && i < limit; i++ {
		out = append(out, hits[i].c)
	}
	return out
}
