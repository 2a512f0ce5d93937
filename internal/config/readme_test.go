package config

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// The README's settings table is the users' list of settings: every
// variable spine reads is a row of it, and no row names one spine does not
// read. (Other SPINE_ variables, such as the test rig's, may appear in prose.)
func TestReadmeListsEverySetting(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	row := regexp.MustCompile("(?m)^\\| `SPINE_.*$")
	name := regexp.MustCompile("`(SPINE_[A-Z_]+)`")
	for _, line := range row.FindAll(readme, -1) {
		for _, m := range name.FindAllSubmatch(line, -1) {
			named[string(m[1])] = true
		}
	}
	for _, v := range Vars {
		if !named[v] {
			t.Errorf("README does not list %s", v)
		}
	}
	for v := range named {
		if !slices.Contains(Vars, v) {
			t.Errorf("README lists %s, which spine does not read (config.Vars)", v)
		}
	}
}
