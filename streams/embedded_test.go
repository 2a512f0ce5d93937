package streams_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/streams"
)

// The client port takes only clients that present the token; in-process
// connections present it themselves.
func TestEmbeddedPortNeedsToken(t *testing.T) {
	if _, err := streams.StartEmbedded(streams.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:0"}); !errors.Is(err, streams.ErrListenWithoutToken) {
		t.Fatalf("a listener without a token = %v, want ErrListenWithoutToken", err)
	}
	token := strings.Repeat("5e", 32)
	emb, err := streams.StartEmbedded(streams.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Stop()
	for name, opts := range map[string][]nats.Option{"anonymous": nil, "a wrong token": {nats.Token("guess")},
		"a user and password": {nats.UserInfo("spine", "spine")}} {
		nc, err := nats.Connect(emb.ClientURL(), append(opts, nats.MaxReconnects(0))...)
		if err == nil {
			nc.Close()
			t.Errorf("%s client was let in", name)
		} else if !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("%s client: %v, want an authorization violation", name, err)
		}
	}
	for name, connect := range map[string]func() (*nats.Conn, error){
		"token option": func() (*nats.Conn, error) { return nats.Connect(emb.ClientURL(), nats.Token(token)) },
		"token in url": func() (*nats.Conn, error) {
			return nats.Connect(strings.Replace(emb.ClientURL(), "//", "//"+token+"@", 1))
		},
		"in-process": func() (*nats.Conn, error) { return emb.Connect() },
	} {
		nc, err := connect()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		js, _ := jetstream.New(nc)
		if _, err := js.AccountInfo(context.Background()); err != nil {
			t.Errorf("%s: jetstream: %v", name, err)
		}
		nc.Close()
	}
}
