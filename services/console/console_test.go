package console

import (
	"regexp"
	"testing"
)

// TestBundleComplete: the embedded bundle has the page and every file the page loads, each with its type.
func TestBundleComplete(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	index := c.assets["index.html"]
	if index == nil || index.contentType != "text/html; charset=utf-8" {
		t.Fatalf("index.html missing or mistyped: %+v", index)
	}
	refs := regexp.MustCompile(`(?:src|href)="/console/([^"]+)"`).FindAllStringSubmatch(string(index.body), -1)
	if len(refs) != 2 {
		t.Fatalf("index.html loads %d files, want the script and the style sheet", len(refs))
	}
	for _, ref := range refs {
		if a := c.assets[ref[1]]; a == nil || len(a.body) == 0 || len(a.gz) == 0 {
			t.Errorf("index.html loads %s, which the bundle lacks", ref[1])
		}
	}
}

func TestIsConsolePath(t *testing.T) {
	for path, want := range map[string]bool{
		"/console": true, "/console/": true, "/console/console.js": true,
		"/consoles": false, "/20210201/console": false, "/": false,
	} {
		if got := IsConsolePath(path); got != want {
			t.Errorf("IsConsolePath(%q) = %v, want %v", path, got, want)
		}
	}
}
