package console

import (
	"testing"

	"github.com/ferry-mq/ferry/persistence/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }
