package streams_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/streams"
)

const planted = "hunter2hunter2"

// notText are the string fields that are not free text: ids, enums and
// digests, which validation holds to their shapes.
var notText = map[string]bool{
	"Envelope.Type": true, "Envelope.ID": true, "Envelope.SessionID": true, "Envelope.App": true,
	"Envelope.Kind": true, "Envelope.Level": true, "Envelope.PlanID": true, "Envelope.TaskID": true,
	"Envelope.StepID": true, "Envelope.ParentRunID": true, "Envelope.WorkerID": true,
	"Envelope.Stream": true, "Envelope.Control": true, "Envelope.Status": true, "Envelope.Billing": true,
	"Envelope.Door": true, "Envelope.CallID": true, "Owner.Org": true, "Owner.Member": true,
	"Event.Action": true, "Event.ContentDigest": true, "Event.CallID": true, "Artifact.ContentDigest": true,
	"Telemetry.Kind": true, "Telemetry.Source": true, "Telemetry.Phase": true, "Telemetry.RequestID": true,
	"Telemetry.ToolUseID": true, "Telemetry.PromptID": true, "Telemetry.PromptDigest": true,
}

// TestRedactedCoversEveryFreeTextField plants a password in each string
// field of the envelope in turn (usage.raw too): a field added later
// without redaction fails here until it is redacted or named in notText.
func TestRedactedCoversEveryFreeTextField(t *testing.T) {
	for _, path := range stringFields(reflect.TypeOf(streams.Envelope{}), nil) {
		name := path[len(path)-1].owner + "." + path[len(path)-1].field
		if notText[name] {
			continue
		}
		e := &streams.Envelope{Event: &streams.Event{}, Usage: &streams.Usage{}, Artifacts: []streams.Artifact{{}},
			Telemetry: &streams.Telemetry{Event: &streams.Event{}, Usage: &streams.Usage{}}}
		set(reflect.ValueOf(e).Elem(), path)
		before, _ := json.Marshal(e)
		got, err := json.Marshal(e.Redacted())
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(got), planted) {
			t.Errorf("%s is not redacted: %s", name, got)
		}
		if after, _ := json.Marshal(e); string(after) != string(before) {
			t.Errorf("%s: Redacted changed the caller's envelope", name)
		}
	}
}

type step struct{ owner, field string }

func stringFields(t reflect.Type, prefix []step) [][]step {
	var out [][]step
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		p := append(append([]step(nil), prefix...), step{t.Name(), f.Name})
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice && ft != reflect.TypeOf(json.RawMessage{}) {
			ft = ft.Elem()
		}
		switch {
		case ft == reflect.TypeOf(json.RawMessage{}) || ft.Kind() == reflect.String:
			out = append(out, p)
		case ft.Kind() == reflect.Struct && ft.PkgPath() == t.PkgPath():
			out = append(out, stringFields(ft, p)...)
		}
	}
	return out
}

func set(v reflect.Value, path []step) {
	for _, s := range path {
		v = v.FieldByName(s.field)
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Slice && v.Type() != reflect.TypeOf(json.RawMessage{}) {
			if v.Kind() == reflect.Pointer {
				v = v.Elem()
			} else {
				v = v.Index(0)
			}
		}
	}
	if v.Kind() == reflect.String {
		v.SetString("x password=" + planted + " y")
		return
	}
	v.SetBytes([]byte(`{"note":"password=` + planted + `","n":1}`))
}

// TestPublisherRedactsBeforeTheLog reads the stored message back from
// JetStream: the secret never reached the log, the rest of the text did,
// and usage.raw is still valid JSON.
func TestPublisherRedactsBeforeTheLog(t *testing.T) {
	js := startJetStream(t)
	pub := streams.NewPublisher(js)
	e := decodeFixture(t, streams.TypeSessionEnd)
	e.Error = "curl -H 'Authorization: Bearer sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA' https://api.example.com/v1"
	e.Usage = &streams.Usage{InputTokens: 1, Raw: json.RawMessage(`{"authorization":"Basic dXNlcjpzM2NyM3Q=","input_tokens":1}`)}
	ack, err := pub.Publish(t.Context(), e, nil)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	s, err := js.Stream(t.Context(), streams.StreamSessions)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := s.GetMsg(t.Context(), ack.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"sk-ant-api03-AAAA", "dXNlcjpzM2NyM3Q="} {
		if strings.Contains(string(raw.Data), secret) {
			t.Errorf("the log holds %q: %s", secret, raw.Data)
		}
	}
	got, err := streams.Decode(raw.Data)
	if err != nil {
		t.Fatalf("stored envelope: %v", err)
	}
	if got.Error != "curl -H 'Authorization: Bearer [REDACTED]' https://api.example.com/v1" {
		t.Errorf("error = %q", got.Error)
	}
	if string(got.Usage.Raw) != `{"authorization":"Basic [REDACTED]","input_tokens":1}` {
		t.Errorf("usage.raw = %s", got.Usage.Raw)
	}
	if !strings.Contains(e.Error, "sk-ant-api03") {
		t.Error("Publish changed the caller's envelope")
	}
}

// rejectAll dead-letters every message with a detail that quotes it.
type rejectAll struct{}

func (rejectAll) Apply(_ context.Context, _ pgx.Tx, msgs []streams.Message) ([]error, error) {
	out := make([]error, len(msgs))
	for i, m := range msgs {
		out[i] = streams.Reject(streams.ReasonMalformed, "bad message %s", m.Data)
	}
	return out, nil
}

// TestDeadLetterIsRedactedAndStaysJSON: the bytes a dead letter keeps (in
// PostgreSQL and on SPINE_DLQ) and its detail lose the secret, and an
// envelope stays valid JSON with its other text intact.
func TestDeadLetterIsRedactedAndStaysJSON(t *testing.T) {
	pool, _ := pgtest.New(t)
	js := startJetStream(t)
	ctx := t.Context()
	body := `{"v":1,"type":"session.chunk","text":"curl -H \"Authorization: Bearer abcdefgh12345678\" https://api.example.com/x"}`
	if _, err := js.Publish(ctx, "spine.session.x.chunk", []byte(body)); err != nil {
		t.Fatal(err)
	}
	done := make(chan uint64, 4)
	p, err := streams.NewProjector(streams.ProjectorConfig{Name: "reject", Stream: streams.StreamSessions,
		Handler: rejectAll{}, Pool: pool, JS: js, OnCommit: func(last uint64, _ []streams.Message) { done <- last }})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	select {
	case <-done:
	case <-waitCtx(t).Done():
		t.Fatal("the message was never dead-lettered")
	}
	var data, detail string
	if err := pool.QueryRow(ctx, `SELECT convert_from(data, 'UTF8'), detail FROM dead_letters`).Scan(&data, &detail); err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"type":"session.chunk","text":"curl -H \"Authorization: Bearer [REDACTED]\" https://api.example.com/x"}`
	if data != want {
		t.Errorf("dead letter data\n got %s\nwant %s", data, want)
	}
	if strings.Contains(detail, "abcdefgh12345678") {
		t.Errorf("detail holds the secret: %s", detail)
	}
	s, err := js.Stream(ctx, streams.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := s.GetLastMsgForSubject(ctx, ">")
	if err != nil {
		t.Fatal(err)
	}
	if string(msg.Data) != want || strings.Contains(fmt.Sprint(msg.Header), "abcdefgh12345678") {
		t.Errorf("SPINE_DLQ holds %s %v", msg.Data, msg.Header)
	}
}

// TestRefusalAfterRedactionSaysSo: a model within its bound as sent but
// past it once each short secret became [REDACTED] is refused with a
// message that says the size is after redaction.
func TestRefusalAfterRedactionSaysSo(t *testing.T) {
	e := &streams.Envelope{V: 1, Type: streams.TypeSessionEnd, ID: "e-1", At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		SessionID: "s-1", Status: "done", Model: strings.Repeat("password=abcd ", 17)}
	if err := e.Validate(); err != nil {
		t.Fatalf("as sent: %v", err)
	}
	_, err := streams.NewPublisher(nil).Publish(t.Context(), e, nil)
	rej, ok := streams.AsRejection(err)
	if !ok || rej.Reason != streams.ReasonFieldTooLong || !strings.Contains(rej.Detail, "after redaction") {
		t.Fatalf("refusal = %v", err)
	}
}
