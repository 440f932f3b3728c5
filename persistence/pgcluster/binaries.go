package pgcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
)

// ErrNoBinaries is returned when no PostgreSQL server binaries can be found.
var ErrNoBinaries = errors.New("PostgreSQL server binaries (initdb, postgres) not found on PATH or under /usr/lib/postgresql/*/bin: " +
	"install them (Debian/Ubuntu: apt-get install -y postgresql; Fedora: dnf install postgresql-server; macOS: brew install postgresql@15) " +
	"or set FERRY_DATABASE_URL to an existing database")

// FindBinaries returns the directory that holds initdb and postgres: the one on PATH when both are there, otherwise
// the newest /usr/lib/postgresql/<major>/bin (Debian's layout, which does not put the server on PATH).
func FindBinaries() (string, error) {
	if initdb, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(initdb)
		if isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	candidates, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(candidates, func(i, j int) bool { return majorOf(candidates[i]) > majorOf(candidates[j]) })
	for _, dir := range candidates {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", ErrNoBinaries
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

func binary(binDir, name string) string { return filepath.Join(binDir, name) }

func describe(cmd *exec.Cmd, out []byte, err error) error {
	return fmt.Errorf("%s: %w: %s", filepath.Base(cmd.Path), err, out)
}
