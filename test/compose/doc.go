// Package compose holds the checks on the deployment files nothing else
// compiles: docker-compose.yaml and its cluster overlay, the Dockerfile,
// deploy/nats.conf and the Prometheus and Grafana provisioning under
// dashboards/. Each check is held to internal/config's Vars and to the other
// files, and is run on the real files and on copies broken on purpose.
//
// The package has no code of its own beyond this file; the tests read the
// files by their path from the repository root.
package compose
