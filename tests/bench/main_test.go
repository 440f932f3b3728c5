package bench

import (
	"testing"

	"github.com/ferry-mq/ferry/persistence/testdb"
)

// TestMain stops the private PostgreSQL cluster that in-process benchmarks (tests/testserver) start; BenchmarkQueue
// runs the ferry binary on its own cluster and does not use it.
func TestMain(m *testing.M) { testdb.Main(m) }
