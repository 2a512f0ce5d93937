package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// StreamTasks holds desktop tasks and runner presence (package desktop).
const StreamTasks = "SPINE_TASKS"

// DuplicateWindow is how long JetStream remembers envelope ids: a producer
// retrying within it stores its envelope once. Two minutes (NATS's own
// default): JetStream keeps every id of the window in memory, about 100-180
// bytes each, so a 10-minute window at 5,000 envelopes/s grew a server by
// 0.5-0.8 GB in the soak. A retry after the window is still harmless: the
// recorder drops a chunk whose seq it has (and dead-letters a second start
// or end with its reason), so nothing is recorded twice.
const DuplicateWindow = 2 * time.Minute

// StreamConfigs returns spine's streams. Retention is limits with no limit:
// the log is the source of truth and projections are rebuilt from it.
func StreamConfigs(replicas int) []jetstream.StreamConfig {
	if replicas < 1 {
		replicas = 1
	}
	return []jetstream.StreamConfig{{
		Name:        StreamSessions,
		Description: "spine sessions: app-session envelopes, MCP call records, worker disconnects, plan budgets",
		Subjects:    []string{subjectSession + ">", subjectMCP + ">", subjectWorker + ">", "spine.plan.>"}, // plan.>: accounting's plan.budget
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Duplicates:  DuplicateWindow,
		MaxMsgSize:  MaxEnvelopeBytes,
	}, {
		Name:        StreamTasks,
		Description: "spine desktop tasks (spine.task.<taskId>.<event>) and runner presence (spine.runner.<runnerId>.<event>)",
		Subjects:    []string{"spine.task.>", "spine.runner.>"},
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Duplicates:  DuplicateWindow,
		MaxMsgSize:  MaxEnvelopeBytes,
	}, {
		Name:        StreamLibrary,
		Description: "spine library: uploads recorded after their bytes are stored (spine.library.upload.<artifactId>)",
		Subjects:    []string{"spine.library.>"},
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Duplicates:  DuplicateWindow,
	}, {
		Name:        StreamDLQ,
		Description: "spine dead letters: messages that broke a rule, with the reason in headers",
		Subjects:    []string{subjectDLQ + ">"},
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Duplicates:  DuplicateWindow,
	}}
}

// EnsureStreams creates spine's streams or updates them to the current
// configuration. It is idempotent.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, replicas int) error {
	for _, cfg := range StreamConfigs(replicas) {
		_, err := js.CreateOrUpdateStream(ctx, cfg)
		if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("ensure stream %s: %w", cfg.Name, err)
		}
	}
	return nil
}
