package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/internal/config"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

type publishSummary struct {
	File     string `json:"file"`
	Sent     int    `json:"sent"`
	Accepted int    `json:"accepted"`
	Refused  int    `json:"refused"`
	// Duplicates were accepted before (same envelope id): stored once.
	Duplicates int                    `json:"duplicates"`
	Refusals   []streams.IngestResult `json:"refusals,omitempty"`
}

func runPublish(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("publish", flag.ContinueOnError)
	url := fs.String("url", "", "spine HTTP API (default $SPINE_URL or http://127.0.0.1:7070)")
	token := fs.String("token", "", "bearer token (default $SPINE_TOKEN)")
	natsURL := fs.String("nats", "", "publish straight to this NATS server instead of HTTP ingest (trusted producers; credentials: the URL's, $SPINE_NATS_TOKEN, or the data dir's nats.token for a server on this machine)")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	batch := fs.Int("batch", 500, "envelopes per HTTP request")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: spine publish [flags] FILE.jsonl|-\n\nEach line is one envelope (see docs/design.md#envelopes).")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return usageError{"publish needs one FILE (or - for stdin)"}
	}
	in, err := openInput(fs.Arg(0))
	if err != nil {
		return err
	}
	defer in.Close()
	sum := &publishSummary{File: fs.Arg(0)}
	if *natsURL != "" {
		err = publishNATS(ctx, *natsURL, in, sum)
	} else {
		err = publishHTTP(ctx, *url, *token, *batch, in, sum)
	}
	if err != nil {
		return err
	}
	return printSummary(sum, *asJSON)
}

func openInput(name string) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(os.Stdin), nil
	}
	return os.Open(name)
}

func lines(in io.Reader, each func(line int, data []byte) error) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), streams.MaxEnvelopeBytes+1024)
	n := 0
	for sc.Scan() {
		n++
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err := each(n, append([]byte(nil), sc.Bytes()...)); err != nil {
			return err
		}
	}
	return sc.Err()
}

func publishHTTP(ctx context.Context, url, token string, size int, in io.Reader, sum *publishSummary) error {
	c, err := newClient(url, token)
	if err != nil {
		return err
	}
	var pending []json.RawMessage
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		body, _ := json.Marshal(pending)
		var resp streams.IngestResponse
		if err := c.do(ctx, "POST", "/v1/ingest", body, &resp); err != nil {
			return err
		}
		for _, r := range resp.Results {
			if r.Duplicate {
				sum.Duplicates++
			}
			if r.Status != 202 {
				r.Index += sum.Sent
				sum.Refusals = append(sum.Refusals, r)
			}
		}
		sum.Sent += len(pending)
		sum.Accepted += resp.Accepted
		sum.Refused += resp.Refused
		progress(sum)
		pending = pending[:0]
		return nil
	}
	err = lines(in, func(_ int, data []byte) error {
		pending = append(pending, data)
		if len(pending) >= size {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// dialNATS connects a trusted producer to the NATS at url with the
// credentials node.NATSAuth picks: those in the URL, SPINE_NATS_TOKEN, or
// the token of the embedded server of the data dir (SPINE_DATA_DIR).
func dialNATS(url string) (*nats.Conn, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return nil, err
	}
	opts, err := node.NATSAuth(cfg, url)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(url, opts...)
	if errors.Is(err, nats.ErrAuthorization) {
		return nil, fmt.Errorf("connect %s: %w (%s)", node.RedactNATSURL(url), err, node.NATSAuthHint(cfg))
	}
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", node.RedactNATSURL(url), err)
	}
	return nc, nil
}

func publishNATS(ctx context.Context, url string, in io.Reader, sum *publishSummary) error {
	nc, err := dialNATS(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	pub := streams.NewPublisher(js)
	return lines(in, func(line int, data []byte) error {
		sum.Sent++
		e, err := streams.Decode(data)
		if err == nil {
			var ack *jetstream.PubAck
			if ack, err = pub.Publish(ctx, e, nil); err == nil && ack.Duplicate {
				sum.Duplicates++
			}
		}
		if err != nil {
			sum.Refused++
			sum.Refusals = append(sum.Refusals, streams.IngestResult{Index: line - 1, Status: 400,
				Error: &streams.ErrorDetail{Code: "refused", Message: err.Error()}})
			return nil
		}
		sum.Accepted++
		return nil
	})
}

func progress(sum *publishSummary) {
	if isTerminal(os.Stderr) {
		fmt.Fprintf(os.Stderr, "\rpublished %d envelopes (%d refused)", sum.Sent, sum.Refused)
	}
}

func printSummary(sum *publishSummary, asJSON bool) error {
	if isTerminal(os.Stderr) {
		fmt.Fprintln(os.Stderr)
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(sum)
	}
	fmt.Fprintf(stdout, "%s: %d sent, %d accepted, %d refused", sum.File, sum.Sent, sum.Accepted, sum.Refused)
	if sum.Duplicates > 0 {
		fmt.Fprintf(stdout, " (%d already stored: retries are kept once)", sum.Duplicates)
	}
	fmt.Fprintln(stdout)
	for _, r := range sum.Refusals {
		fmt.Fprintf(stdout, "  envelope %d (%s): %d %s: %s\n", r.Index+1, r.ID, r.Status, r.Error.Code, r.Error.Message)
	}
	if sum.Refused > 0 {
		return fmt.Errorf("%d of %d envelopes refused", sum.Refused, sum.Sent)
	}
	return nil
}
