package desktop_test

import (
	"context"
	"testing"
	"time"

	"github.com/spinehq/spine/desktop"
)

// A task message the projection fails on (here a trigger refuses the state
// change it makes, an error outside the data classes) is isolated and
// dead-lettered, and still moves the task's last sequence: the task can be
// claimed and cancelled afterwards, where every publish expecting the
// task's last sequence would conflict for ever.
func TestIsolatedTaskMessageLeavesTheTaskUsable(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "x"})
	if _, err := e.h.Pool.Exec(ctx, `CREATE FUNCTION refuse_claims() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'claims are refused'; END $$;
		CREATE TRIGGER refuse_claims BEFORE UPDATE ON desktop_tasks FOR EACH ROW
		WHEN (NEW.state IS DISTINCT FROM OLD.state) EXECUTE FUNCTION refuse_claims()`); err != nil {
		t.Fatal(err)
	}
	m := &desktop.Message{V: 1, Type: desktop.TypeClaimed, ID: "m-refused", At: time.Now().UTC(), Org: "acme",
		Member: "alice", TaskID: sess.LatestTaskID, RunnerID: "laptop"}
	seq := e.publishRaw(m.Subject(), m)
	var reason string
	if err := e.h.Pool.QueryRow(ctx, `SELECT reason FROM dead_letters WHERE seq = $1`, int64(seq)).Scan(&reason); err != nil {
		t.Fatalf("dead letter of the refused claim: %v", err)
	}
	if _, err := e.h.Pool.Exec(ctx, `DROP TRIGGER refuse_claims ON desktop_tasks`); err != nil {
		t.Fatal(err)
	}
	c := r.claim(sess.LatestTaskID)
	if c.Task.State != desktop.StateClaimed {
		t.Fatalf("claim after the isolated message: %+v", c.Task)
	}
	e.must(200, "POST", "/v1/remote-sessions/"+sess.ID+"/cancel", alice, nil)
	if lease := r.heartbeat(c.Task.ID, c.Fence); !lease.CancelRequested {
		t.Fatalf("heartbeat after cancel = %+v", lease)
	}
}
