package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/internal/config"
)

// codexBilling is the billing signal of a Codex thread read from the
// thread's own rollout, which the real Codex writes beside its exec
// --json output: $CODEX_HOME (the app's environment is spine run's), else
// ~/.codex, sessions/YYYY/MM/DD/rollout-…-THREAD.jsonl. Only that
// thread's file is opened, and of it only what the rollout's translation
// reads for billing (apps.CodexRolloutBilling). "" when the thread id is
// not one, no such file is there or it names no ChatGPT sign-in: the
// session's billing is then unknown (docs/run.md, docs/counting.md).
func codexBilling(thread string) string {
	if thread == "" || len(thread) > 64 || strings.Trim(thread, "0123456789abcdefABCDEF-") != "" {
		return "" // not a thread id: nothing of it goes into a path
	}
	home := config.CodexHome()
	if home == "" {
		return ""
	}
	files, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*", "*", "rollout-*-"+thread+".jsonl"))
	for _, path := range files { // one, unless a copy was made by hand
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		b, _ := apps.CodexRolloutBilling(f)
		f.Close()
		if b != "" {
			return b
		}
	}
	return ""
}
