package desktop_test

import (
	"testing"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/streams"
)

// FuzzDecode: any bytes on any subject decode to a valid message or a
// rejection, never a panic, and a decoded message belongs on its subject.
func FuzzDecode(f *testing.F) {
	f.Add("spine.task.t1.claimed", []byte(`{"v":1,"type":"task.claimed","id":"m-1","at":"2026-01-01T00:00:00Z","org":"o","member":"m","taskId":"t1","runnerId":"r1"}`))
	f.Add("spine.task.t1.events", []byte(`{"v":1,"type":"task.events","id":"m-2","at":"2026-01-01T00:00:00Z","org":"o","member":"m","taskId":"t1","fence":3,"events":[{"seq":1,"type":"assistant_text","text":"hi"}]}`))
	f.Add("spine.runner.r1.registered", []byte(`{"v":1,"type":"runner.registered","id":"m-3","at":"2026-01-01T00:00:00Z","org":"o","member":"m","runnerId":"r1","runner":{"machine":"x","protocolVersion":1}}`))
	f.Add("spine.task.t1.queued", []byte(`{"v":1,"type":"task.queued","id":"m-4","at":"2026-01-01T00:00:00Z","org":"o","member":"m","taskId":"t1","task":{"kind":"remote_session","target":"desktop","remoteSessionId":"rs-1","instructions":"x"}}`))
	f.Add("spine.task.t1.session_linked", []byte(`{"v":1,"type":"task.session_linked","id":"ln-1","at":"2026-01-01T00:00:00Z","org":"o","member":"m","taskId":"t1","runnerId":"r1","fence":3,"recordedSession":"s-1"}`))
	f.Add("", []byte(`null`))
	f.Fuzz(func(t *testing.T, subject string, data []byte) {
		m, err := desktop.Decode(subject, data)
		if err != nil {
			if _, ok := streams.AsRejection(err); !ok {
				t.Fatalf("error is not a rejection: %v", err)
			}
			return
		}
		if subject != "" && m.Subject() != subject {
			t.Fatalf("decoded %q from subject %q", m.Subject(), subject)
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("decoded message does not validate: %v", err)
		}
	})
}
