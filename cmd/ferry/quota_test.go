package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/persistence/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// runJSON runs a ferry command and decodes what it prints.
func runJSON(t *testing.T, out any, args ...string) {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stdout := os.Stdout
	os.Stdout = w
	runErr := run(context.Background(), args)
	os.Stdout = stdout
	require.NoError(t, w.Close())
	var buf bytes.Buffer
	_, _ = io.Copy(&buf, r)
	require.NoError(t, runErr, buf.String())
	require.NoError(t, json.Unmarshal(buf.Bytes(), out), buf.String())
}

// TestQuotaCommands: `ferry quota set` overrides a tenancy's quota, `ferry quota list` prints every quota with
// its value and use, and `--value default` brings the configured default back.
func TestQuotaCommands(t *testing.T) {
	t.Setenv("FERRY_DATABASE_URL", testdb.New(t))
	t.Setenv("FERRY_QUOTA_QUEUES", "7")
	var tenancy struct{ ID string }
	runJSON(t, &tenancy, "tenancy", "create", "--name", "quota-test")
	type quota struct {
		Name  string
		Value int64
		Used  *int64
	}
	var list []quota
	runJSON(t, &list, "quota", "list", "--tenancy", tenancy.ID)
	require.Len(t, list, 9)
	byName := map[string]quota{}
	for _, q := range list {
		byName[q.Name] = q
	}
	require.EqualValues(t, 7, byName["queues"].Value, "the default of the configuration")
	require.NotNil(t, byName["policies"].Used)
	require.EqualValues(t, 1, *byName["policies"].Used, "the Tenant Admin Policy")
	require.Nil(t, byName["requests-per-second"].Used)

	var set quota
	runJSON(t, &set, "quota", "set", "--tenancy", tenancy.ID, "--name", "requests-per-second", "--value", "42")
	require.Equal(t, quota{Name: "requests-per-second", Value: 42}, set)
	runJSON(t, &set, "quota", "set", "--tenancy", tenancy.ID, "--name", "requests-per-second", "--value", "default")
	require.EqualValues(t, 5000, set.Value)

	require.Error(t, run(context.Background(), []string{"quota", "set", "--tenancy", tenancy.ID, "--name", "nope", "--value", "1"}))
	require.Error(t, run(context.Background(), []string{"quota", "set", "--tenancy", tenancy.ID, "--name", "queues", "--value", "-1"}))

	var usage []map[string]any
	runJSON(t, &usage, "usage", "--tenancy", tenancy.ID, "--since", "1h")
	require.Empty(t, usage)
}
