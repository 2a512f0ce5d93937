package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spinehq/spine/internal/config"
)

// A level says how much intelligence a run needs, not which model serves
// it (docs/run.md#levels): fast, strong or reasoning. Each app's own flags
// for a level come from a table, built in, that the machine's owner may
// override in levels.json in spine's config directory.

// levelTable is, by app and by level, the arguments that run the app at
// that level.
type levelTable map[string]map[string][]string

// builtinLevels is the table spine ships. Claude Code takes a model alias
// and an effort; Codex keeps the model its config names and takes a
// reasoning effort (model names drift; set them in levels.json).
var builtinLevels = levelTable{
	"claude-code": {
		"fast":      {"--model", "haiku"},
		"strong":    {"--model", "sonnet"},
		"reasoning": {"--model", "opus", "--effort", "high"},
	},
	"codex": {
		"fast":      {"-c", "model_reasoning_effort=low"},
		"strong":    {"-c", "model_reasoning_effort=medium"},
		"reasoning": {"-c", "model_reasoning_effort=high"},
	},
}

// runLevels are the levels an app runs at.
var runLevels = []string{"fast", "strong", "reasoning"}

// errEmbeddings: no app run gives an embedding.
var errEmbeddings = errors.New("embeddings is refused: an embedding must come from the embedder of the index it is written into, and no app run gives one")

// levelsPath is levels.json in spine's config directory.
func levelsPath() (string, error) {
	d, err := config.Dir()
	return filepath.Join(d, "levels.json"), err
}

// loadLevels is the built-in table with path's entries over it; a missing
// file is the built-in table. Each entry of the file replaces the
// built-in one of its app and level.
func loadLevels(path string) (levelTable, error) {
	t := levelTable{}
	for app, m := range builtinLevels {
		t[app] = map[string][]string{}
		for l, args := range m {
			t[app][l] = args
		}
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, err
	}
	var over levelTable
	if err := json.Unmarshal(b, &over); err != nil {
		return nil, fmt.Errorf("%s: %w (want {\"APP\": {\"LEVEL\": [ARGS...]}})", path, err)
	}
	for app, m := range over {
		if _, ok := t[app]; !ok {
			return nil, fmt.Errorf("%s: app %q: want claude-code or codex", path, app)
		}
		for l, args := range m {
			if l == "embeddings" {
				return nil, fmt.Errorf("%s: %s: %w", path, app, errEmbeddings)
			}
			if !slices.Contains(runLevels, l) {
				return nil, fmt.Errorf("%s: %s: level %q: want fast, strong or reasoning", path, app, l)
			}
			t[app][l] = args
		}
	}
	return t, nil
}

// withLevel is args, as appArgs made them, with the level's flags added:
// after codex's exec (and its --json), at the end for Claude Code. A flag
// the level sets that args already has is refused: which one would win is
// the app's to say.
func withLevel(t levelTable, app, level string, args []string) ([]string, error) {
	switch {
	case level == "":
		return args, nil
	case level == "embeddings":
		return nil, fmt.Errorf("--level %w", errEmbeddings)
	case !slices.Contains(runLevels, level):
		return nil, fmt.Errorf("--level %q: want fast, strong or reasoning", level)
	}
	add := t[app][level]
	have := flagIDs(args)
	for _, id := range flagIDs(add) {
		if slices.Contains(have, id) {
			return nil, fmt.Errorf("--level %s sets %s, and the app's arguments set it too: leave one out", level, id)
		}
	}
	if app == "codex" { // after exec --json: exec's own options
		return slices.Concat(args[:2], add, args[2:]), nil
	}
	return slices.Concat(args, add), nil
}

// flagIDs names what each flag of args sets: the flag (its long name for
// Codex's -m), or for a config override (-c KEY=VALUE) "-c KEY".
func flagIDs(args []string) []string {
	var ids []string
	for i, a := range args {
		name, value, inline := strings.Cut(a, "=")
		switch {
		case !strings.HasPrefix(a, "-"):
		case name == "-c" || name == "--config":
			if !inline && i+1 < len(args) {
				value = args[i+1]
			}
			key, _, _ := strings.Cut(value, "=")
			ids = append(ids, "-c "+strings.TrimSpace(key))
		case name == "-m":
			ids = append(ids, "--model")
		default:
			ids = append(ids, name)
		}
	}
	return ids
}
