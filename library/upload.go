package library

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/streams"
)

// UploadType is the type of the event that records an upload on the log.
const UploadType = "library.upload"

// UploadSubjectPrefix starts every upload event's subject.
const UploadSubjectPrefix = "spine.library.upload."

// Upload is the event that records, after its bytes are safely stored, that
// a member uploaded a file. It has no field that could carry producedBy:
// what a person uploads was produced by nobody spine can name, and the
// absence is the answer. Decoding refuses unknown fields, so nothing can be
// smuggled in beside it.
type Upload struct {
	V           int           `json:"v"`
	Type        string        `json:"type"`
	ID          string        `json:"id"` // also the artifact id
	At          time.Time     `json:"at"`
	Digest      string        `json:"digest"`
	Size        int64         `json:"size"`
	Name        string        `json:"name"`
	ContentType string        `json:"contentType"`
	Owner       streams.Owner `json:"owner"`
}

// MaxNameLen bounds an artifact's name.
const MaxNameLen = 512

// NewUploadID returns a fresh artifact id for an upload.
func NewUploadID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "upl-" + hex.EncodeToString(b)
}

// DecodeUpload parses and checks an upload event.
func DecodeUpload(data []byte) (*Upload, error) {
	var u Upload
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&u); err != nil {
		return nil, streams.Reject(streams.ReasonMalformed, "upload event: %v", err)
	}
	if dec.More() {
		return nil, streams.Reject(streams.ReasonMalformed, "upload event: trailing data")
	}
	return &u, u.Validate()
}

// Validate checks an upload event.
func (u *Upload) Validate() error {
	switch {
	case u.V != 1:
		return streams.Reject(streams.ReasonUnknownVersion, "upload v=%d", u.V)
	case u.Type != UploadType:
		return streams.Reject(streams.ReasonUnknownType, "type %q", u.Type)
	case !streams.ValidID(u.ID) || !strings.HasPrefix(u.ID, "upl-"):
		// Other prefixes name the recorder's artifacts; an upload must never collide with one.
		return streams.Reject(streams.ReasonInvalidID, "upload id must be upl-…")
	case u.At.IsZero():
		return streams.Reject(streams.ReasonMissingField, "at is required")
	case u.Size < 0:
		return streams.Reject(streams.ReasonInvalidField, "size is negative")
	case !streams.ValidOwnerID(u.Owner.Org) || !streams.ValidOwnerID(u.Owner.Member):
		return streams.Reject(streams.ReasonInvalidID, "owner org and member")
	}
	if err := CheckName(u.Name); err != nil {
		return streams.Reject(streams.ReasonInvalidField, "%v", err)
	}
	if err := CheckContentType(u.ContentType); err != nil {
		return streams.Reject(streams.ReasonInvalidField, "%v", err)
	}
	if _, err := ParseDigest(u.Digest); err != nil {
		return streams.Reject(streams.ReasonInvalidField, "%v", err)
	}
	return nil
}

// CheckName checks an artifact name: 1 to MaxNameLen bytes of UTF-8, no
// control characters.
func CheckName(name string) error {
	if name == "" || len(name) > MaxNameLen || !utf8.ValidString(name) {
		return fmt.Errorf("name must be 1-%d bytes of UTF-8", MaxNameLen)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("name must not contain control characters")
		}
	}
	return nil
}

// CheckContentType checks an upload's content type: at most 255 bytes, no
// control characters.
func CheckContentType(ct string) error {
	if len(ct) > 255 || strings.ContainsFunc(ct, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("contentType must be at most 255 bytes without control characters")
	}
	return nil
}

// PublishUpload records an upload on the log, with its id as Nats-Msg-Id.
func PublishUpload(ctx context.Context, js jetstream.JetStream, u *Upload) error {
	if err := u.Validate(); err != nil {
		return err
	}
	data, err := json.Marshal(u)
	if err != nil {
		return err
	}
	msg := nats.NewMsg(UploadSubjectPrefix + u.ID)
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, u.ID)
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("record upload %s: %w", u.ID, err)
	}
	return nil
}

// Projector applies upload events: each becomes an artifact owned by its
// uploader, with no producedBy. It is a streams.Handler.
type Projector struct{}

var _ streams.Handler = Projector{}

// Apply inserts one artifact per upload event.
func (Projector) Apply(ctx context.Context, tx pgx.Tx, msgs []streams.Message) ([]error, error) {
	results := make([]error, len(msgs))
	b := &pgx.Batch{}
	for i, m := range msgs {
		u, err := DecodeUpload(m.Data)
		if err == nil && m.Subject != UploadSubjectPrefix+u.ID {
			err = streams.Reject(streams.ReasonSubject, "upload %s on %q", u.ID, m.Subject)
		}
		if err != nil {
			results[i] = err
			continue
		}
		b.Queue(`INSERT INTO artifacts (id, kind, name, digest, size, content_type, org, member, created_at)
			VALUES ($1, 'upload', $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING`,
			u.ID, u.Name, u.Digest, u.Size, u.ContentType, u.Owner.Org, u.Owner.Member, u.At)
	}
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return nil, fmt.Errorf("record %d uploads: %w", b.Len(), err)
		}
	}
	return results, nil
}
