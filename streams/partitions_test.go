package streams_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/streams"
)

// Partition computes what nats-server's {{partition(n,1)}} transform does,
// and OriginalSubject maps the partitioned stream's subjects back.
func TestPartitionsMatchTheServer(t *testing.T) {
	emb, err := streams.StartEmbedded(streams.EmbeddedConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Stop()
	nc, _ := emb.Connect()
	defer nc.Close()
	js := mustJS(t, nc)
	ctx := context.Background()
	if err := streams.EnsureStreams(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	if err := streams.EnsurePartitioned(ctx, js, 5, 1); err != nil {
		t.Fatal(err)
	}
	var published []string
	for i := range 40 {
		subj := fmt.Sprintf("spine.session.sess-%d_x.chunk", i)
		published = append(published, subj)
		js.Publish(ctx, subj, []byte("x"))
	}
	for _, subj := range []string{"spine.mcp.sess-3_x.call", "spine.worker.w9.disconnect", "spine.plan.p1.budget"} {
		published = append(published, subj)
		js.Publish(ctx, subj, []byte("x"))
	}
	st, _ := js.Stream(ctx, streams.StreamPartitioned)
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, _ := st.Info(ctx)
		if info.State.Msgs == 42 { // the plan event is not sourced
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("partitioned stream holds %d", info.State.Msgs)
		}
		time.Sleep(20 * time.Millisecond) // sourcing is asynchronous
	}
	for seq := uint64(1); seq <= 42; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		orig := streams.OriginalSubject(m.Subject)
		if orig != published[seq-1] {
			t.Fatalf("%s maps back to %s, published %s", m.Subject, orig, published[seq-1])
		}
		if id, ok := strings.CutPrefix(orig, "spine.session."); ok {
			id = strings.TrimSuffix(id, ".chunk")
			if want := fmt.Sprintf("spine.p.%d.", streams.Partition(id, 5)); !strings.HasPrefix(m.Subject, want) {
				t.Fatalf("%s: server put it in %s, Partition says %s", id, m.Subject, want)
			}
		}
	}
	if err := streams.EnsurePartitioned(ctx, js, 8, 1); !errors.Is(err, streams.ErrPartitionsChanged) {
		t.Fatalf("changing the partition count: %v", err)
	}
}

func TestSubjectMatcher(t *testing.T) {
	m := streams.SubjectMatcher([]string{"spine.session.*.start", "spine.worker.>"})
	for subj, want := range map[string]bool{
		"spine.session.s1.start": true, "spine.session.s1.chunk": false, "spine.session.start": false,
		"spine.worker.w1.disconnect": true, "spine.worker": false, "spine.plan.p.budget": false,
		"spine.session.s1.start.x": false,
	} {
		if got := m(subj); got != want {
			t.Errorf("%s: %v, want %v", subj, got, want)
		}
	}
}
