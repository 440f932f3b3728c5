// Package console serves ferry's web console at /console: a single-page application built from web/ (TypeScript,
// Preact, esbuild) into dist/, committed, and embedded in the binary, so that serving it needs no Node.js.
//
// The console is static: it holds no secret and calls only the public API, with the token its user pasted (kept in
// the tab's sessionStorage). Its pages are answered with a strict Content-Security-Policy: scripts and styles only
// from this origin's files (no inline code, no eval), API calls only to this origin, no frames, no plugins.
package console

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
)

// Path is where the console is served.
const Path = "/console"

// ContentSecurityPolicy is sent with every file of the console.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed dist
var dist embed.FS

// asset is one file of the bundle, kept with its gzip form and its ETag.
type asset struct {
	contentType string
	body, gz    []byte
	etag        string
}

// Console serves the embedded bundle.
type Console struct {
	assets map[string]*asset // by name under dist/: "index.html", "console.js", "console.css"
}

// New reads the embedded bundle once.
func New() (*Console, error) {
	c := &Console{assets: map[string]*asset{}}
	err := fs.WalkDir(dist, "dist", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := dist.ReadFile(name)
		if err != nil {
			return err
		}
		var gz bytes.Buffer
		w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		_, _ = w.Write(body)
		if err := w.Close(); err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		c.assets[strings.TrimPrefix(name, "dist/")] = &asset{
			contentType: cmp.Or(mime.TypeByExtension(path.Ext(name)), "application/octet-stream"),
			body:        body, gz: gz.Bytes(), etag: `"` + hex.EncodeToString(sum[:12]) + `"`,
		}
		return nil
	})
	return c, err
}

// Register adds GET (and HEAD) /console and /console/* to r. The console's own routes are in the URL's fragment
// (/console#/queues/…), so every page is index.html.
func (c *Console) Register(r gin.IRoutes) {
	r.GET(Path, c.serve)
	r.HEAD(Path, c.serve)
	r.GET(Path+"/*file", c.serve)
	r.HEAD(Path+"/*file", c.serve)
}

// IsConsolePath tells whether a request path is the console's (served without authentication).
func IsConsolePath(p string) bool { return p == Path || strings.HasPrefix(p, Path+"/") }

func (c *Console) serve(ctx *gin.Context) {
	name := strings.TrimPrefix(ctx.Param("file"), "/")
	if name == "" {
		name = "index.html"
	}
	a := c.assets[name]
	if a == nil {
		ctx.Header("Content-Type", "application/json")
		ctx.String(http.StatusNotFound, `{"code":"NotAuthorizedOrNotFound","message":"the console has no file %q"}`, name)
		return
	}
	h := ctx.Writer.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-cache") // revalidated by ETag: a new binary's bundle is picked up at once
	h.Set("ETag", a.etag)
	h.Set("Vary", "Accept-Encoding")
	h.Set("Content-Type", a.contentType)
	if ctx.GetHeader("If-None-Match") == a.etag {
		ctx.Status(http.StatusNotModified)
		return
	}
	body := a.body
	if strings.Contains(ctx.GetHeader("Accept-Encoding"), "gzip") {
		h.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	ctx.Status(http.StatusOK)
	if ctx.Request.Method != http.MethodHead {
		_, _ = ctx.Writer.Write(body)
	}
}
