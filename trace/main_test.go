package trace_test

import (
	"testing"

	"github.com/spinehq/spine/internal/spinetest"
)

func TestMain(m *testing.M) { spinetest.Main(m) }
