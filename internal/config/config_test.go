package config

import (
	"strings"
	"testing"
	"time"
)

func TestFromEnvDefaultsAndLimits(t *testing.T) {
	for _, v := range Vars {
		t.Setenv(v, "")
	}
	c, err := FromEnv()
	if err != nil || c.HTTPAddr != DefaultHTTPAddr || c.NATSListen != DefaultNATSListen || c.Replicas != 1 ||
		c.FileCap != 0 || c.MaxUploadBytes != 0 || !strings.HasSuffix(c.DataDir, "/data") || c.IdleTimeout != 0 ||
		c.CancelGrace != 0 || c.TelemetryIdle != 0 || c.PublicURL != "" {
		t.Fatalf("defaults = %+v, %v", c, err)
	}
	t.Setenv(EnvFileCap, "2048")
	t.Setenv(EnvMaxUpload, "1000000")
	t.Setenv(EnvReplicas, "3")
	t.Setenv(EnvIdleTimeout, "30m")
	t.Setenv(EnvCancelGrace, "90s")
	t.Setenv(EnvTelemetryIdle, "5m")
	t.Setenv(EnvPublicURL, "https://spine.example.test/")
	if c, err = FromEnv(); err != nil || c.FileCap != 2048 || c.MaxUploadBytes != 1000000 || c.Replicas != 3 ||
		c.IdleTimeout != 30*time.Minute || c.CancelGrace != 90*time.Second || c.TelemetryIdle != 5*time.Minute || c.PublicURL != "https://spine.example.test" {
		t.Fatalf("set = %+v, %v", c, err)
	}
	for k, bad := range map[string]string{EnvFileCap: "9999999", EnvMaxUpload: "-1", EnvReplicas: "7",
		EnvIdleTimeout: "2", EnvCancelGrace: "500ms", EnvTelemetryIdle: "200h"} {
		t.Setenv(k, bad)
		if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, bad, err)
		}
		t.Setenv(k, "")
	}
}

func TestRequestLimitsFromEnv(t *testing.T) {
	for _, v := range Vars {
		t.Setenv(v, "")
	}
	t.Setenv(EnvBodyMinRate, "1024")
	t.Setenv(EnvBodyGrace, "3s")
	t.Setenv(EnvInflightBytes, "off")
	t.Setenv(EnvOrgBytesPerSec, "1e6")
	t.Setenv(EnvOrgEnvelopesPerSec, "off")
	c, err := FromEnv()
	if err != nil || c.BodyMinRate != 1024 || c.BodyGrace != 3*time.Second || c.InflightBytes != -1 ||
		c.OrgBytesPerSec != 1e6 || c.OrgEnvelopesPerSec != -1 {
		t.Fatalf("limits = %+v, %v", c, err)
	}
	for k, bad := range map[string]string{EnvBodyMinRate: "0", EnvBodyGrace: "soon", EnvOrgBytesPerSec: "-5"} {
		t.Setenv(k, bad)
		if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, bad, err)
		}
		t.Setenv(k, "")
	}
}

func TestRemoteFromEnv(t *testing.T) {
	t.Setenv(EnvURL, "")
	t.Setenv(EnvToken, "")
	if got := RemoteFromEnv("", ""); got != (Remote{URL: DefaultURL}) {
		t.Fatalf("unset: %+v", got)
	}
	t.Setenv(EnvURL, "http://env:1")
	t.Setenv(EnvToken, "env-token")
	if got := RemoteFromEnv("", ""); got != (Remote{URL: "http://env:1", Token: "env-token"}) {
		t.Fatalf("from the environment: %+v", got)
	}
	if got := RemoteFromEnv("http://flag:2", "flag-token"); got != (Remote{URL: "http://flag:2", Token: "flag-token"}) {
		t.Fatalf("flags win: %+v", got)
	}
	t.Setenv(EnvDatabaseURL, "postgres://x")
	if c, err := FromEnv(); err != nil || c.DatabaseURL != DatabaseURL() || DatabaseURL() != "postgres://x" {
		t.Fatalf("DatabaseURL %q, FromEnv %q (%v)", DatabaseURL(), c.DatabaseURL, err)
	}
}
