package compose_test

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"path"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/spinehq/spine/internal/config"
)

// The monitoring half of docker-compose.yaml: prometheus scrapes spine, and
// grafana is provisioned with dashboards and data sources that reach
// prometheus and postgres with the credentials the postgres service has.

const (
	promConfigFile        = "dashboards/prometheus.yml"
	datasourcesFile       = "dashboards/grafana/provisioning/datasources/spine.yaml"
	dashboardProviderFile = "dashboards/grafana/provisioning/dashboards/spine.yaml"
	provisioningDir       = "dashboards/grafana/provisioning"
	dashboardsDir         = "dashboards/grafana/dashboards"
)

func checkMonitoring(services map[string]service, files map[string]string) []string {
	var problems []string
	for _, name := range []string{"prometheus", "grafana"} {
		if _, ok := services[name]; !ok {
			problems = append(problems, "missing service "+name)
		}
	}
	if len(problems) > 0 {
		return problems
	}
	problems = append(problems, checkPrometheus(services, files[promConfigFile])...)
	problems = append(problems, checkGrafanaMounts(services, files[dashboardProviderFile])...)
	problems = append(problems, checkDatasources(services, files[datasourcesFile])...)
	for _, dep := range []string{"prometheus", "postgres"} {
		if _, ok := services["grafana"].DependsOn[dep]; !ok {
			problems = append(problems, "grafana does not depend on "+dep)
		}
	}
	return problems
}

// mountedFrom is the host path mounted at target, relative to the
// repository root ("" when nothing is).
func mountedFrom(s service, target string) string {
	src, ok := s.Volumes[target]
	if !ok || !strings.HasPrefix(src, ".") {
		return ""
	}
	return path.Clean(src)
}

// flagValue is --name=value (or --name value) among args, or def.
func flagValue(args []string, name, def string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return def
}

func checkPrometheus(services map[string]service, text string) []string {
	prom := services["prometheus"]
	configPath := flagValue(prom.Command, "--config.file", "/etc/prometheus/prometheus.yml")
	if mountedFrom(prom, configPath) != promConfigFile {
		return []string{fmt.Sprintf("prometheus does not mount %s at its --config.file %s", promConfigFile, configPath)}
	}
	var cfg struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		return []string{fmt.Sprintf("%s: %v", promConfigFile, err)}
	}
	_, httpPort, _ := net.SplitHostPort(services["spine"].Env[config.EnvHTTPAddr])
	var problems []string
	for _, sc := range cfg.ScrapeConfigs {
		if sc.JobName != "spine" {
			continue
		}
		if p := cmp.Or(sc.MetricsPath, "/metrics"); p != "/metrics" {
			problems = append(problems, fmt.Sprintf("%s: metrics_path %s, spine serves /metrics", promConfigFile, p))
		}
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				host, port, _ := net.SplitHostPort(target)
				if host != "spine" {
					problems = append(problems, fmt.Sprintf("%s: target %s is not the spine service", promConfigFile, target))
				} else if port != httpPort {
					problems = append(problems, fmt.Sprintf("%s scrapes spine:%s, spine listens on %s", promConfigFile, port, httpPort))
				}
			}
		}
		return problems
	}
	return []string{promConfigFile + " has no scrape job named spine"}
}

func checkGrafanaMounts(services map[string]service, providerText string) []string {
	g := services["grafana"]
	var problems []string
	if mountedFrom(g, "/etc/grafana/provisioning") != provisioningDir {
		problems = append(problems, "grafana does not mount "+provisioningDir+" at /etc/grafana/provisioning")
	}
	var provider struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	if err := yaml.Unmarshal([]byte(providerText), &provider); err != nil || len(provider.Providers) == 0 {
		return append(problems, dashboardProviderFile+" names no dashboard provider")
	}
	if p := provider.Providers[0].Options.Path; mountedFrom(g, p) != dashboardsDir {
		problems = append(problems, fmt.Sprintf("the dashboard provider reads %s, where grafana does not mount %s", p, dashboardsDir))
	}
	return problems
}

func checkDatasources(services map[string]service, text string) []string {
	var doc struct {
		Datasources []struct {
			Type, URL, User string
			JSONData        map[string]any    `yaml:"jsonData"`
			Secure          map[string]string `yaml:"secureJsonData"`
		} `yaml:"datasources"`
	}
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return []string{fmt.Sprintf("%s: %v", datasourcesFile, err)}
	}
	var problems []string
	kinds := map[string]bool{}
	for _, ds := range doc.Datasources {
		kinds[ds.Type] = true
		switch ds.Type {
		case "prometheus":
			if u, err := url.Parse(ds.URL); err != nil || u.Host != "prometheus:9090" {
				problems = append(problems, fmt.Sprintf("the Prometheus data source's url %s is not the prometheus service (prometheus:9090)", ds.URL))
			}
		case "grafana-postgresql-datasource", "postgres":
			problems = append(problems, checkPostgresDatasource(services, ds.URL, ds.User, scalar(ds.JSONData["database"]), ds.Secure["password"])...)
		}
	}
	for _, want := range []string{"prometheus", "grafana-postgresql-datasource"} {
		if !kinds[want] {
			problems = append(problems, datasourcesFile+" has no "+want+" data source")
		}
	}
	return problems
}

func checkPostgresDatasource(services map[string]service, addr, user, db, password string) []string {
	pg := services["postgres"].Env
	wantUser := cmp.Or(pg["POSTGRES_USER"], "postgres")
	var problems []string
	for _, c := range []struct{ what, got, want string }{
		{"url", addr, "postgres:5432"},
		{"user", user, wantUser},
		{"database", db, cmp.Or(pg["POSTGRES_DB"], wantUser)},
		{"password", password, pg["POSTGRES_PASSWORD"]},
	} {
		if c.got != c.want {
			problems = append(problems, fmt.Sprintf("the PostgreSQL data source's %s is %q, postgres service has %q", c.what, c.got, c.want))
		}
	}
	return problems
}
