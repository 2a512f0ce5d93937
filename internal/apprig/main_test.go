package apprig_test

import (
	"os"
	"testing"

	"github.com/spinehq/spine/internal/apprig"
)

func TestMain(m *testing.M) {
	code := m.Run()
	apprig.RemoveBuilt()
	os.Exit(code)
}
