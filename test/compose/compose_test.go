package compose_test

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/spinehq/spine/internal/config"
)

// docker-compose.yaml and the Dockerfile are code nothing else compiles: these
// tests hold them to config.Vars and to each other. Each check is a function
// from the parsed file to a list of problems, run on the real files and on
// copies broken on purpose, so a check that can never fail is caught too.

// service is the part of a compose service the checks read, normalised from
// compose's alternative spellings (string or list, map or list).
type service struct {
	Build       string            // build context; "" when the service only pulls an image
	Command     []string          // command, split into arguments
	Env         map[string]string // environment
	Ports       []port            // published ports
	DependsOn   map[string]string // dependency → condition ("" in the list form)
	Healthcheck bool
	Volumes     map[string]string // container path → host path or volume name
}

type port struct{ HostIP, Published, Target string }

// rawService is a compose service as YAML decodes it.
type rawService struct {
	Build       any            `yaml:"build"`
	Command     any            `yaml:"command"`
	Environment any            `yaml:"environment"`
	Ports       []any          `yaml:"ports"`
	DependsOn   any            `yaml:"depends_on"`
	Healthcheck map[string]any `yaml:"healthcheck"`
	Volumes     []any          `yaml:"volumes"`
}

func parseCompose(data []byte) (map[string]service, error) {
	var doc struct {
		Services map[string]rawService `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse compose: %w", err)
	}
	services := make(map[string]service, len(doc.Services))
	for name, raw := range doc.Services {
		s, err := raw.normalise()
		if err != nil {
			return nil, fmt.Errorf("parse compose service %s: %w", name, err)
		}
		services[name] = s
	}
	return services, nil
}

func (r rawService) normalise() (service, error) {
	s := service{
		Build:       buildContext(r.Build),
		Command:     stringList(r.Command, strings.Fields),
		Env:         keyValues(r.Environment),
		DependsOn:   dependencies(r.DependsOn),
		Healthcheck: r.Healthcheck != nil && r.Healthcheck["disable"] != true,
		Volumes:     mounts(r.Volumes),
	}
	for _, p := range r.Ports {
		pp, err := parsePort(p)
		if err != nil {
			return s, err
		}
		s.Ports = append(s.Ports, pp)
	}
	return s, nil
}

func buildContext(v any) string {
	switch b := v.(type) {
	case string:
		return b
	case map[string]any:
		return fmt.Sprint(b["context"])
	}
	return ""
}

// stringList reads a YAML string (split by split) or list of scalars.
func stringList(v any, split func(string) []string) []string {
	switch l := v.(type) {
	case string:
		return split(l)
	case []any:
		out := make([]string, len(l))
		for i, e := range l {
			out[i] = fmt.Sprint(e)
		}
		return out
	}
	return nil
}

// keyValues reads a map, or a list of KEY=VALUE strings.
func keyValues(v any) map[string]string {
	out := map[string]string{}
	if m, ok := v.(map[string]any); ok {
		for k, val := range m {
			out[k] = scalar(val)
		}
		return out
	}
	for _, kv := range stringList(v, nil) {
		k, val, _ := strings.Cut(kv, "=")
		out[k] = val
	}
	return out
}

func scalar(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// dependencies reads depends_on as a list of names or a map of conditions.
func dependencies(v any) map[string]string {
	out := map[string]string{}
	if m, ok := v.(map[string]any); ok {
		for name, spec := range m {
			cond, _ := spec.(map[string]any)
			out[name] = scalar(cond["condition"])
		}
		return out
	}
	for _, name := range stringList(v, nil) {
		out[name] = ""
	}
	return out
}

// mounts reads volumes in the short form "source:target[:mode]" or the long
// form, keyed by target.
func mounts(vols []any) map[string]string {
	out := map[string]string{}
	for _, v := range vols {
		if m, ok := v.(map[string]any); ok {
			out[scalar(m["target"])] = scalar(m["source"])
			continue
		}
		parts := strings.Split(scalar(v), ":")
		if len(parts) >= 2 {
			out[parts[1]] = parts[0]
		}
	}
	return out
}

// parsePort reads "[[host:]published:]target[/proto]" or the long form.
func parsePort(v any) (port, error) {
	if m, ok := v.(map[string]any); ok {
		return port{HostIP: scalar(m["host_ip"]), Published: scalar(m["published"]), Target: scalar(m["target"])}, nil
	}
	spec, _, _ := strings.Cut(scalar(v), "/")
	i := strings.LastIndexByte(spec, ':')
	if i < 0 {
		return port{Target: spec}, nil
	}
	p := port{Target: spec[i+1:]}
	rest := spec[:i]
	j := strings.LastIndexByte(rest, ':')
	p.Published, p.HostIP = rest[j+1:], strings.Trim(rest[:max(j, 0)], "[]")
	if p.Target == "" || p.Published == "" {
		return p, fmt.Errorf("port %q: empty port", spec)
	}
	return p, nil
}

// checkCompose returns everything wrong with services, or nothing.
func checkCompose(services map[string]service) []string {
	var problems []string
	for _, name := range []string{"nats", "postgres", "spine"} {
		if _, ok := services[name]; !ok {
			problems = append(problems, "missing service "+name)
		}
	}
	if len(problems) > 0 {
		return problems
	}
	for _, check := range []func(map[string]service) []string{
		checkSpineBuild, checkSpineEnvNames, checkHTTPAddr, checkNATSURL,
		checkDatabaseURL, checkJetStream, checkReplicas, checkDependsOn,
	} {
		problems = append(problems, check(services)...)
	}
	return problems
}

func checkSpineBuild(services map[string]service) []string {
	if ctx := services["spine"].Build; path.Clean(ctx) != "." {
		return []string{fmt.Sprintf("spine builds from %q, want \".\"", ctx)}
	}
	return nil
}

func checkSpineEnvNames(services map[string]service) []string {
	var problems []string
	for k := range services["spine"].Env {
		if !slices.Contains(config.Vars, k) {
			problems = append(problems, "spine environment "+k+" is not in config.Vars")
		}
	}
	return problems
}

func checkHTTPAddr(services map[string]service) []string {
	spine := services["spine"]
	host, p, err := net.SplitHostPort(spine.Env[config.EnvHTTPAddr])
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", config.EnvHTTPAddr, err)}
	}
	var problems []string
	if host != "" && host != "0.0.0.0" && host != "::" {
		problems = append(problems, fmt.Sprintf("%s listens on %s only: unreachable from outside the container", config.EnvHTTPAddr, host))
	}
	if !slices.ContainsFunc(spine.Ports, func(pp port) bool { return pp.Target == p && pp.Published != "" }) {
		problems = append(problems, fmt.Sprintf("%s port %s is not published in spine's ports", config.EnvHTTPAddr, p))
	}
	return problems
}

func checkNATSURL(services map[string]service) []string {
	u, err := url.Parse(services["spine"].Env[config.EnvNATSURL])
	if err != nil || u.Scheme != "nats" {
		return []string{fmt.Sprintf("%s is not a nats:// URL", config.EnvNATSURL)}
	}
	var problems []string
	if u.Hostname() != "nats" {
		problems = append(problems, fmt.Sprintf("%s names host %q, not the nats service", config.EnvNATSURL, u.Hostname()))
	}
	if p, listen := cmp.Or(u.Port(), "4222"), natsPort(services["nats"].Command); p != listen {
		problems = append(problems, fmt.Sprintf("%s port %s, but nats listens on %s", config.EnvNATSURL, p, listen))
	}
	return problems
}

// natsPort is the client port nats-server's arguments select.
func natsPort(args []string) string {
	for i, a := range args {
		if (a == "-p" || a == "--port") && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--port="); ok {
			return v
		}
	}
	return "4222"
}

func checkDatabaseURL(services map[string]service) []string {
	u, err := url.Parse(services["spine"].Env[config.EnvDatabaseURL])
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return []string{fmt.Sprintf("%s is not a postgres:// URL", config.EnvDatabaseURL)}
	}
	pg := services["postgres"].Env
	user := cmp.Or(pg["POSTGRES_USER"], "postgres")
	password, _ := u.User.Password()
	var problems []string
	for _, c := range []struct{ what, got, want string }{
		{"host", u.Hostname(), "postgres"},
		{"port", cmp.Or(u.Port(), "5432"), "5432"},
		{"user", u.User.Username(), user},
		{"password", password, pg["POSTGRES_PASSWORD"]},
		{"database", strings.TrimPrefix(u.Path, "/"), cmp.Or(pg["POSTGRES_DB"], user)},
	} {
		if c.got != c.want {
			problems = append(problems, fmt.Sprintf("%s %s is %q, postgres service has %q", config.EnvDatabaseURL, c.what, c.got, c.want))
		}
	}
	return problems
}

func checkJetStream(services map[string]service) []string {
	if args := services["nats"].Command; !slices.Contains(args, "-js") && !slices.Contains(args, "--jetstream") {
		return []string{"nats command does not enable JetStream (-js)"}
	}
	return nil
}

// checkReplicas: the compose NATS is one node, so streams must be R1.
func checkReplicas(services map[string]service) []string {
	if r := services["spine"].Env[config.EnvReplicas]; r != "" && r != "1" {
		return []string{fmt.Sprintf("%s=%s, but nats is a single node", config.EnvReplicas, r)}
	}
	return nil
}

func checkDependsOn(services map[string]service) []string {
	var problems []string
	for _, dep := range []string{"nats", "postgres"} {
		cond, ok := services["spine"].DependsOn[dep]
		switch {
		case !ok:
			problems = append(problems, "spine does not depend on "+dep)
		case cond == "service_healthy" && !services[dep].Healthcheck:
			problems = append(problems, "spine waits for "+dep+" to be healthy, but it has no healthcheck")
		}
	}
	return problems
}

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct{ Cmd, Args string }

func parseDockerfile(text string) []instruction {
	var out []instruction
	text = strings.ReplaceAll(text, "\\\n", " ")
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmd, args, _ := strings.Cut(line, " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.Join(strings.Fields(args), " ")})
	}
	return out
}

// checkDockerfile checks the Dockerfile against the port compose serves on.
func checkDockerfile(text, httpPort string) []string {
	var problems []string
	steps := parseDockerfile(text)
	has := func(cmd, substr string) bool {
		return slices.ContainsFunc(steps, func(in instruction) bool {
			return in.Cmd == cmd && strings.Contains(in.Args, substr)
		})
	}
	if !slices.ContainsFunc(steps, func(in instruction) bool {
		return in.Cmd == "RUN" && strings.Contains(in.Args, "go build") && strings.HasSuffix(in.Args, "./cmd/spine")
	}) {
		problems = append(problems, "Dockerfile does not go build ./cmd/spine")
	}
	if !has("ENV", "CGO_ENABLED=0") && !has("RUN", "CGO_ENABLED=0 go build") {
		problems = append(problems, "Dockerfile does not set CGO_ENABLED=0")
	}
	if !has("EXPOSE", httpPort) {
		problems = append(problems, "Dockerfile does not EXPOSE "+httpPort)
	}
	if !has("ENTRYPOINT", `["/spine"]`) || !has("CMD", `["serve"]`) {
		problems = append(problems, `Dockerfile does not run ["/spine"] ["serve"]`)
	}
	return append(problems, checkDockerEnv(steps)...)
}

// checkDockerEnv: every SPINE_ variable the image sets is one spine reads.
func checkDockerEnv(steps []instruction) []string {
	var problems []string
	for _, in := range steps {
		if in.Cmd != "ENV" {
			continue
		}
		for _, kv := range strings.Fields(in.Args) {
			k, _, _ := strings.Cut(kv, "=")
			if strings.HasPrefix(k, "SPINE_") && !slices.Contains(config.Vars, k) {
				problems = append(problems, "Dockerfile ENV "+k+" is not in config.Vars")
			}
		}
	}
	return problems
}

// repoPath is a file of the repository by its path from the root, as the
// compose files name it; go test runs in this package's directory, two
// below the root.
func repoPath(name string) string { return filepath.Join("..", "..", filepath.FromSlash(name)) }

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(repoPath(name))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

// checkedFiles are the files the checks read, by path from the repository root.
var checkedFiles = []string{"docker-compose.yaml", "Dockerfile", promConfigFile, datasourcesFile, dashboardProviderFile, natsConfFile}

// composeProblems runs every check on the files (path → text).
func composeProblems(t *testing.T, files map[string]string) []string {
	t.Helper()
	services, err := parseCompose([]byte(files["docker-compose.yaml"]))
	if err != nil {
		return []string{err.Error()}
	}
	problems := checkCompose(services)
	_, httpPort, _ := net.SplitHostPort(services["spine"].Env[config.EnvHTTPAddr])
	problems = append(problems, checkDockerfile(files["Dockerfile"], httpPort)...)
	problems = append(problems, checkNATSAuth(services, files)...)
	return append(problems, checkMonitoring(services, files)...)
}

func readCheckedFiles(t *testing.T) map[string]string {
	files := map[string]string{}
	for _, name := range checkedFiles {
		files[name] = readFile(t, name)
	}
	return files
}

func TestComposeAndDockerfileAgree(t *testing.T) {
	for _, p := range composeProblems(t, readCheckedFiles(t)) {
		t.Error(p)
	}
}

// mutation replaces old, which must occur exactly once, by new in one file,
// and expects a problem containing want.
type mutation struct {
	name, file, old, new, want string
}

var mutations = []mutation{
	{"published port", "docker-compose.yaml", `"7070:7070"`, `"7071:7071"`, "port 7070 is not published"},
	{"http addr port", "docker-compose.yaml", "SPINE_HTTP_ADDR: 0.0.0.0:7070", "SPINE_HTTP_ADDR: 0.0.0.0:8080", "port 8080 is not published"},
	{"http addr loopback", "docker-compose.yaml", "SPINE_HTTP_ADDR: 0.0.0.0:7070", "SPINE_HTTP_ADDR: 127.0.0.1:7070", "unreachable"},
	{"unknown variable", "docker-compose.yaml", "SPINE_DATA_DIR: /data", "SPINE_DATADIR: /data", "SPINE_DATADIR is not in config.Vars"},
	{"nats url port", "docker-compose.yaml", "nats://nats:4222", "nats://nats:4333", "nats listens on 4222"},
	{"nats listens elsewhere", "docker-compose.yaml", `"-m", "8222"]`, `"-m", "8222", "-p", "4333"]`, "nats listens on 4333"},
	{"nats url host", "docker-compose.yaml", "nats://nats:4222", "nats://localhost:4222", "not the nats service"},
	{"database host", "docker-compose.yaml", "@postgres:5432/", "@db:5432/", `host is "db"`},
	{"database password", "docker-compose.yaml", "POSTGRES_PASSWORD: spine", "POSTGRES_PASSWORD: secret", "password"},
	{"database name", "docker-compose.yaml", "5432/spine?", "5432/other?", "database"},
	{"no jetstream", "docker-compose.yaml", `"-js", "-sd"`, `"-sd"`, "JetStream"},
	{"replicas", "docker-compose.yaml", `SPINE_STREAM_REPLICAS: "1"`, `SPINE_STREAM_REPLICAS: "3"`, "single node"},
	{"no depends on postgres", "docker-compose.yaml", "      postgres:\n        condition: service_healthy\n", "", "does not depend on postgres"},
	{"missing service", "docker-compose.yaml", "\n  postgres:\n    image:", "\n  pg:\n    image:", "missing service postgres"},
	{"build context", "docker-compose.yaml", "build: .", "build: ./cmd", "spine builds from"},
	{"healthy without healthcheck", "docker-compose.yaml", "    healthcheck:\n      test: [\"CMD\", \"pg_isready\"", "    x-healthcheck:\n      test: [\"CMD\", \"pg_isready\"", "no healthcheck"},
	{"builds another package", "Dockerfile", "./cmd/spine", "./cmd/other", "does not go build ./cmd/spine"},
	{"cgo", "Dockerfile", "CGO_ENABLED=0", "CGO_ENABLED=1", "CGO_ENABLED=0"},
	{"exposes another port", "Dockerfile", "EXPOSE 7070", "EXPOSE 8080", "EXPOSE 7070"},
	{"image env unknown", "Dockerfile", "SPINE_DATA_DIR=/data", "SPINE_DATA=/data", "SPINE_DATA is not in config.Vars"},
	{"entrypoint", "Dockerfile", `CMD ["serve"]`, `CMD ["migrate"]`, "does not run"},
	{"scrape port", promConfigFile, `"spine:7070"`, `"spine:7071"`, "scrapes spine:7071"},
	{"scrape host", promConfigFile, `"spine:7070"`, `"localhost:7070"`, "not the spine service"},
	{"scrape path", promConfigFile, "metrics_path: /metrics", "metrics_path: /stats", "metrics_path"},
	{"prometheus config unmounted", "docker-compose.yaml", "./dashboards/prometheus.yml:", "./dashboards/prom.yml:", "does not mount " + promConfigFile},
	{"prometheus reads another config", "docker-compose.yaml", "--config.file=/etc/prometheus/prometheus.yml", "--config.file=/etc/prom.yml", "does not mount " + promConfigFile},
	{"no grafana", "docker-compose.yaml", "\n  grafana:\n", "\n  graphs:\n", "missing service grafana"},
	{"provisioning unmounted", "docker-compose.yaml", "./dashboards/grafana/provisioning:", "./grafana/provisioning:", "provisioning"},
	{"dashboards elsewhere", "docker-compose.yaml", "./dashboards/grafana/dashboards:/var/lib/grafana/dashboards", "./dashboards/grafana/dashboards:/dashboards", "dashboard provider reads"},
	{"datasource prometheus url", datasourcesFile, "http://prometheus:9090", "http://localhost:9090", "Prometheus data source"},
	{"datasource postgres password", datasourcesFile, "password: spine", "password: hunter2", "password"},
	{"datasource postgres host", datasourcesFile, "url: postgres:5432", "url: db:5432", "PostgreSQL data source"},
	{"nats without its config", "docker-compose.yaml", `["-c", "/etc/nats/spine.conf", "-js"`, `["-js"`, "nats does not read " + natsConfFile},
	{"nats config unmounted", "docker-compose.yaml", "./deploy/nats.conf:", "./nats.conf:", "nats does not read " + natsConfFile},
	{"nats token with a default", "docker-compose.yaml", "    environment:\n      SPINE_NATS_TOKEN: ${SPINE_NATS_TOKEN:?",
		"    environment:\n      SPINE_NATS_TOKEN: ${SPINE_NATS_TOKEN:-dev}${X:?", "want a required"},
	{"spine without the nats token", "docker-compose.yaml", "`docker inspect`).\n      SPINE_NATS_TOKEN: ${SPINE_NATS_TOKEN:?",
		"`docker inspect`).\n      SPINE_NATS_TOKEN: ${OTHER_TOKEN:?", "spine's SPINE_NATS_TOKEN"},
	{"nats url with credentials", "docker-compose.yaml", "SPINE_NATS_URL: nats://nats:4222", "SPINE_NATS_URL: nats://me:pw@nats:4222", "carries credentials"},
	{"nats config without the token", natsConfFile, "token: $SPINE_NATS_TOKEN", "# token", "does not require"},
	{"grafana without postgres", "docker-compose.yaml", "      postgres: {condition: service_healthy}\n", "", "grafana does not depend on postgres"},
}

// TestComposeChecksCatch proves each check can fail: it breaks one thing at a
// time in a copy of the real files and expects the checks to name it.
func TestComposeChecksCatch(t *testing.T) {
	files := readCheckedFiles(t)
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			broken := maps.Clone(files)
			if n := strings.Count(broken[m.file], m.old); n != 1 {
				t.Fatalf("%s holds %q %d times, want once: update this mutation", m.file, m.old, n)
			}
			broken[m.file] = strings.Replace(broken[m.file], m.old, m.new, 1)
			problems := composeProblems(t, broken)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, m.want) }) {
				t.Fatalf("no problem mentions %q; got %q", m.want, problems)
			}
		})
	}
}
