package compose_test

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spinehq/spine/internal/config"
)

var clusterNATS = []string{"nats", "nats-2", "nats-3"}

// checkCluster checks docker-compose.cluster.yaml on top of the base file.
func checkCluster(base, overlay map[string]service) []string {
	var problems []string
	names := map[string]bool{}
	for _, svc := range clusterNATS {
		args := overlay[svc].Command
		if !slices.Contains(args, "-js") {
			problems = append(problems, svc+": JetStream is off")
		}
		name := flagValue(args, "--name", "")
		if name == "" || names[name] {
			problems = append(problems, fmt.Sprintf("%s: server name %q missing or shared", svc, name))
		}
		names[name] = true
		if flagValue(args, "--cluster_name", "") != "spine" {
			problems = append(problems, svc+": not in cluster spine")
		}
		if !overlay[svc].Healthcheck {
			problems = append(problems, svc+": no healthcheck")
		}
		problems = append(problems, checkNATSNode(svc, merged(base[svc], overlay[svc]))...)
		problems = append(problems, checkRoutes(svc, args)...)
	}
	for _, svc := range []string{"spine", "spine-2"} {
		problems = append(problems, checkClusterSpine(svc, base, overlay)...)
	}
	return problems
}

// merged is an overlay service on top of its base one, as compose merges
// them: the overlay's command, environment and volumes over the base's.
func merged(base, overlay service) service {
	s := overlay
	if len(s.Command) == 0 {
		s.Command = base.Command
	}
	s.Env, s.Volumes = maps.Clone(base.Env), maps.Clone(base.Volumes)
	if s.Env == nil {
		s.Env = map[string]string{}
	}
	if s.Volumes == nil {
		s.Volumes = map[string]string{}
	}
	maps.Copy(s.Env, overlay.Env)
	maps.Copy(s.Volumes, overlay.Volumes)
	return s
}

// checkRoutes: a node routes to exactly the other two on the cluster port.
func checkRoutes(svc string, args []string) []string {
	clusterPort := "6222"
	if u, err := url.Parse(flagValue(args, "--cluster", "")); err == nil && u.Port() != "" {
		clusterPort = u.Port()
	}
	var got, want []string
	for _, r := range strings.Split(flagValue(args, "--routes", ""), ",") {
		if u, err := url.Parse(r); err == nil && u.Host != "" {
			got = append(got, u.Host)
		}
	}
	for _, other := range clusterNATS {
		if other != svc {
			want = append(want, other+":"+clusterPort)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		return []string{fmt.Sprintf("%s routes to %v, want %v", svc, got, want)}
	}
	return nil
}

func checkClusterSpine(svc string, base, overlay map[string]service) []string {
	env := map[string]string{}
	for k, v := range base[svc].Env {
		env[k] = v
	}
	for k, v := range overlay[svc].Env {
		env[k] = v
	}
	var problems []string
	for k := range env {
		if !slices.Contains(config.Vars, k) {
			problems = append(problems, fmt.Sprintf("%s: %s is not a spine setting", svc, k))
		}
	}
	var hosts []string
	for _, u := range strings.Split(env[config.EnvNATSURL], ",") {
		if p, err := url.Parse(u); err == nil && p.Port() == "4222" {
			hosts = append(hosts, p.Hostname())
		}
	}
	sort.Strings(hosts)
	if !slices.Equal(hosts, clusterNATS) {
		problems = append(problems, fmt.Sprintf("%s: %s reaches %v, want all of %v on 4222", svc, config.EnvNATSURL, hosts, clusterNATS))
	}
	if env[config.EnvReplicas] != "3" {
		problems = append(problems, fmt.Sprintf("%s: %s=%q on a three-node cluster, want 3", svc, config.EnvReplicas, env[config.EnvReplicas]))
	}
	if p := env[config.EnvPartitions]; p == "" || p == "1" {
		problems = append(problems, fmt.Sprintf("%s: %s=%q: instances share the recorder only when it is partitioned", svc, config.EnvPartitions, p))
	}
	if env[config.EnvDatabaseURL] != base["spine"].Env[config.EnvDatabaseURL] {
		problems = append(problems, svc+": not the same database as spine")
	}
	if env[config.EnvNATSToken] != base["nats"].Env[config.EnvNATSToken] {
		problems = append(problems, fmt.Sprintf("%s: %s is %q, not the nats service's", svc, config.EnvNATSToken, env[config.EnvNATSToken]))
	}
	if !strings.HasPrefix(env[config.EnvTokenSecret], "${SPINE_TOKEN_SECRET:?") {
		problems = append(problems, svc+": instances must share a required SPINE_TOKEN_SECRET")
	}
	return problems
}

// checkSamePartitions: every instance must split the work the same way.
func checkSamePartitions(overlay map[string]service) []string {
	if a, b := overlay["spine"].Env[config.EnvPartitions], overlay["spine-2"].Env[config.EnvPartitions]; a != b {
		return []string{fmt.Sprintf("spine has %s=%q, spine-2 %q", config.EnvPartitions, a, b)}
	}
	return nil
}

func clusterProblems(t *testing.T, baseText, overlayText string) []string {
	t.Helper()
	base, err := parseCompose([]byte(baseText))
	if err != nil {
		t.Fatal(err)
	}
	overlay, err := parseCompose([]byte(overlayText))
	if err != nil {
		return []string{"parse: " + err.Error()}
	}
	return append(checkCluster(base, overlay), checkSamePartitions(overlay)...)
}

func TestComposeClusterAgrees(t *testing.T) {
	base, overlay := readFile(t, "docker-compose.yaml"), readFile(t, "docker-compose.cluster.yaml")
	if p := clusterProblems(t, base, overlay); len(p) > 0 {
		t.Fatalf("docker-compose.cluster.yaml:\n  %s", strings.Join(p, "\n  "))
	}
}

func TestComposeClusterChecksCatch(t *testing.T) {
	base, overlay := readFile(t, "docker-compose.yaml"), readFile(t, "docker-compose.cluster.yaml")
	for _, m := range []struct{ name, from, to string }{
		{"route to self", `"nats://nats-2:6222,nats://nats-3:6222"`, `"nats://nats:6222,nats://nats-3:6222"`},
		{"shared server name", `"--name", "nats-3"`, `"--name", "nats-2"`},
		{"replicas", `SPINE_STREAM_REPLICAS: "3"
      SPINE_PARTITIONS: "8"
      SPINE_TOKEN_SECRET`, `SPINE_STREAM_REPLICAS: "1"
      SPINE_PARTITIONS: "8"
      SPINE_TOKEN_SECRET`},
		{"missing node in url", `SPINE_NATS_URL: nats://nats:4222,nats://nats-2:4222,nats://nats-3:4222
      SPINE_STREAM_REPLICAS: "3"
      SPINE_PARTITIONS: "8"
      SPINE_TOKEN_SECRET`, `SPINE_NATS_URL: nats://nats:4222,nats://nats-2:4222
      SPINE_STREAM_REPLICAS: "3"
      SPINE_PARTITIONS: "8"
      SPINE_TOKEN_SECRET`},
		{"node without the nats config", `["-c", "/etc/nats/spine.conf", "-js", "-sd", "/data", "-m", "8222", "--name", "nats-3"`,
			`["-js", "-sd", "/data", "-m", "8222", "--name", "nats-3"`},
		{"node config unmounted", "      - nats-3-data:/data\n      - ./deploy/nats.conf:", "      - nats-3-data:/data\n      - ./nats.conf:"},
		{"nodes without the token", "  environment:\n    SPINE_NATS_TOKEN: ${SPINE_NATS_TOKEN:?", "  environment:\n    X: ${SPINE_NATS_TOKEN:?"},
		{"spine-2 without the nats token", "nats://nats-3:4222\n      SPINE_NATS_TOKEN: ${SPINE_NATS_TOKEN:?", "nats://nats-3:4222\n      SPINE_NATS_TOKEN: ${X:?"},
		{"unknown setting", `SPINE_DATA_DIR: /data`, `SPINE_DATADIR: /data`},
		{"partitions differ", `SPINE_PARTITIONS: "8"
      SPINE_DATA_DIR`, `SPINE_PARTITIONS: "4"
      SPINE_DATA_DIR`},
	} {
		t.Run(m.name, func(t *testing.T) {
			if strings.Count(overlay, m.from) != 1 {
				t.Fatalf("%q appears %d times", m.from, strings.Count(overlay, m.from))
			}
			if p := clusterProblems(t, base, strings.Replace(overlay, m.from, m.to, 1)); len(p) == 0 {
				t.Fatal("the broken file passed")
			}
		})
	}
}
