package tests

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The layers of ferry, lowest first (docs/architecture.md draws them). A package may import packages of its own
// layer and of the layers below it, never above; the transport (gin, HTTP statuses) appears only from the http
// layer up; and the HTTP adapters of the two planes do not import each other.
var layers = []struct {
	name     string
	packages []string // import paths below the module; a trailing "/..." takes the subtree
	ginFree  bool
}{
	{"base", []string{"fault", "internal/...", "migrations", "openapi", "iam/policy", "iam/authz", "services/filter",
		"services/telemetry", "services/wire/jsonx"}, true},
	{"store", []string{"persistence", "persistence/..."}, true},
	{"domain", []string{"tenancy", "iam", "services/messaging", "services/maintenance",
		"services/metering", "services/limits"}, true},
	{"http", []string{"openapi/api", "services/apierror", "services/wire", "services/httpapi", "services/controlplane",
		"services/dataplane", "services/push", "services/console"}, false},
	{"wiring", []string{"services/server", "cmd/...", "openapi/sdk", "openapi/internal/...", "deploy/...", "tests", "tests/...",
		"terraform", "terraform/..."}, false},
}

// adapters are the HTTP adapters of the planes: each stands on its own.
var adapters = []string{"services/controlplane", "services/dataplane", "services/push"}

const module = "github.com/ferry-mq/ferry/"

func layerOf(pkg string) int {
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, p := range l.packages {
			prefix, subtree := strings.CutSuffix(p, "/...")
			if (pkg == p || subtree && strings.HasPrefix(pkg, prefix+"/")) && len(p) > bestLen {
				best, bestLen = i, len(p)
			}
		}
	}
	return best
}

// goList runs go list over the module and returns, per package, the listed field (space-separated).
func goList(t *testing.T, field string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}:{{join ."+field+" \" \"}}", "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, list, _ := strings.Cut(line, ":")
		m[strings.TrimPrefix(pkg, module)] = strings.Fields(list)
	}
	return m
}

// TestLayers: no package imports a package of a layer above its own, every package has a layer, and the
// adapters do not import each other.
func TestLayers(t *testing.T) {
	for pkg, imports := range goList(t, "Imports") {
		own := layerOf(pkg)
		if own < 0 {
			t.Errorf("%s has no layer: place it in layers (tests/layers_test.go) and in docs/architecture.md", pkg)
			continue
		}
		for _, imp := range imports {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			if l := layerOf(dep); l > own {
				t.Errorf("%s (layer %s) imports %s (layer %s, above it)", pkg, layers[own].name, dep, layers[l].name)
			}
			if slices.Contains(adapters, pkg) && slices.Contains(adapters, dep) {
				t.Errorf("adapter %s imports adapter %s: share code through a lower package", pkg, dep)
			}
		}
	}
}

// TestNoTransportBelowHTTP: below the http layer nothing depends on gin, even indirectly (go list -deps).
func TestNoTransportBelowHTTP(t *testing.T) {
	for pkg, deps := range goList(t, "Deps") {
		if l := layerOf(pkg); l < 0 || !layers[l].ginFree {
			continue
		}
		for _, d := range deps {
			if strings.HasPrefix(d, "github.com/gin-gonic/gin") {
				t.Errorf("%s (layer %s) depends on gin", pkg, layers[layerOf(pkg)].name)
				break
			}
		}
	}
}
