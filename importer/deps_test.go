package importer

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The importer is a producer in front of the log: it speaks the wire
// contract (streams, apps) and must not depend on the HTTP server, the
// projections or anything else above the log.
func TestImporterSitsBelowTheServer(t *testing.T) {
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, above := range []string{"server", "recorder", "desktop", "trace", "spine", "auth", "node", "gateway"} {
			if pkg == "github.com/spinehq/spine/"+above || strings.HasPrefix(pkg, "github.com/spinehq/spine/"+above+"/") {
				t.Errorf("importer depends on %s", pkg)
			}
		}
	}
}
