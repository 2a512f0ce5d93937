package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spinehq/spine/internal/config"
)

// client talks to a running spine's HTTP API.
type client struct {
	base  string
	token string
	http  *http.Client
}

func newClient(url, token string) (*client, error) {
	token = cmp.Or(token, os.Getenv(config.EnvToken))
	if token == "" {
		return nil, usageError{"no token: pass --token or set SPINE_TOKEN (spine serve prints a development token; spine token mint makes one)"}
	}
	return &client{base: strings.TrimRight(cmp.Or(url, os.Getenv(config.EnvURL), config.DefaultURL), "/"),
		token: token, http: &http.Client{Timeout: 60 * time.Second}}, nil
}

// apiError is an error response from spine.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

func (c *client) do(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("is spine serving at %s? %w", c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 400 {
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(data, &eb)
		return &apiError{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = data
		return nil
	}
	return json.Unmarshal(data, out)
}
