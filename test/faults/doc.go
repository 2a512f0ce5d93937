// Package faults holds spine's fault tests: real components failing in the
// middle of real work. spine is killed with SIGKILL at random points of a
// long ingest; PostgreSQL's connections are killed under the projectors; a
// NATS cluster loses a node. Each test ends by comparing the projections with
// an uninterrupted replay of the same log (node.Rebuild with Verify) and by
// counting that every acknowledged publish was projected exactly once.
//
// The package has no code of its own beyond this file; the tests build and
// drive the spine binary and the node package.
package faults
