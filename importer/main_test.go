package importer

import (
	"testing"

	"github.com/spinehq/spine/internal/apprig"
	"github.com/spinehq/spine/internal/spinetest"
)

func TestMain(m *testing.M) { spinetest.Main(m, apprig.RemoveBuilt) }
