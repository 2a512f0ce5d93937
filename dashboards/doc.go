// Package dashboards holds spine's Grafana dashboards ("Agent cost",
// "Ingestion health"), their provisioning and the Prometheus scrape config
// docker-compose.yaml mounts. Its tests check them: always, that every panel
// names a provisioned data source and a query; and with
// SPINE_DASHBOARDS_CHECK=1 (make dashboards-check), against a real spine fed
// with sessions and a real Prometheus, that every PromQL expression returns
// data and every SQL query runs and returns rows.
package dashboards
