package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Every setting is read in one place, internal/config (FromEnv,
// DatabaseURL, RemoteFromEnv), so a command cannot read a variable its own
// way beside the Config another command gets: no file of the CLI calls
// os.Getenv or os.LookupEnv.
func TestCommandsReadSettingsThroughConfig(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "os" && (sel.Sel.Name == "Getenv" || sel.Sel.Name == "LookupEnv") {
				t.Errorf("%s: os.%s: read the setting through internal/config", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}
