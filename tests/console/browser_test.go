package console

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The browser the tests drive: Debian's chromium (make tools installs it), headless, with a fresh profile, and
// with everything that would reach the network on its own turned off.

// chromiumPath finds the browser, or skips the test (fails it when FERRY_REQUIRE_TOOLS=1, as in CI).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("FERRY_CHROMIUM"), "chromium", "chromium-browser"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("FERRY_REQUIRE_TOOLS") == "1" {
		t.Fatal("chromium is missing: make tools installs it (apt-get install chromium)")
	}
	t.Skip("chromium is missing: make tools installs it (apt-get install chromium); FERRY_REQUIRE_TOOLS=1 makes this a failure")
	return ""
}

// newTab starts a browser for the test and returns a context for its one tab, with a laptop-sized viewport.
func newTab(t *testing.T) context.Context {
	t.Helper()
	exe := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox cannot start
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("font-render-hinting", "none"),
		chromedp.WindowSize(1280, 860),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithErrorf(func(string, ...any) {}))
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
	})
	do(t, ctx, chromedp.EmulateViewport(1280, 860))
	// Every page records the Content-Security-Policy violations it sees; the test fails on any (the console must
	// work under its own CSP: no inline script or style, no eval, no other origin).
	_, err := chromedp.Run(ctx, chromedp.Action[chromedp.Void](func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `window.__cspViolations = []; document.addEventListener("securitypolicyviolation",
				e => window.__cspViolations.push(e.violatedDirective + " " + e.blockedURI + " " + e.sourceFile + ":" + e.lineNumber));`,
		})
		return chromedp.Void{}, err
	}))
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__cspViolations ?? []`))
		require.NoError(t, err)
		require.Empty(t, v, "Content-Security-Policy violations")
	})
	return ctx
}

// do runs actions in the tab, failing the test on an error.
func do(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, actions...))
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	require.NoError(t, err, js)
	return v
}

// waitFor waits until the JavaScript predicate is true (up to 20 s), failing with what the page shows.
func waitFor(t *testing.T, ctx context.Context, what, predicate string) {
	t.Helper()
	pollCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var err error
	for {
		_, err = chromedp.Run(pollCtx, chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingInterval(50*time.Millisecond)))
		// A navigation replaces the page's JavaScript context under a running poll: poll the new page.
		if err == nil || pollCtx.Err() != nil || !strings.Contains(err.Error(), "Cannot find context") {
			break
		}
	}
	if err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("waiting for %s (%s): %v\nthe page shows:\n%s", what, predicate, err, body)
	}
}

// waitText waits until the page (or the element of the CSS selector) shows text.
func waitText(t *testing.T, ctx context.Context, selector, text string) {
	t.Helper()
	waitFor(t, ctx, fmt.Sprintf("%q in %s", text, selector), fmt.Sprintf(
		`[...document.querySelectorAll(%s)].some(e => e.innerText.includes(%s))`, js(selector), js(text)))
}

// fill sets an input's, textarea's or select's value as typing would (an input or change event follows).
func fill(t *testing.T, ctx context.Context, selector, value string) {
	t.Helper()
	ok := eval[bool](t, ctx, fmt.Sprintf(`(() => {
		const e = document.querySelector(%s); if (!e) return false;
		e.focus(); e.value = %s;
		e.dispatchEvent(new Event(e.tagName === "SELECT" ? "change" : "input", {bubbles: true}));
		return true })()`, js(selector), js(value)))
	require.True(t, ok, "no element %s", selector)
}

// click clicks the button (or link) whose text is label, inside the element of scope ("" = the page).
func click(t *testing.T, ctx context.Context, scope, label string) {
	t.Helper()
	if scope == "" {
		scope = "body"
	}
	waitFor(t, ctx, "an enabled "+label+" control", fmt.Sprintf(`[...document.querySelectorAll(%s + " button, " + %s + " a")]
		.some(e => (e.getAttribute("aria-label") || e.innerText).trim() === %s && !e.disabled)`, js(scope), js(scope), js(label)))
	ok := eval[bool](t, ctx, fmt.Sprintf(`(() => {
		const e = [...document.querySelectorAll(%s + " button, " + %s + " a")]
			.find(e => (e.getAttribute("aria-label") || e.innerText).trim() === %s && !e.disabled);
		if (!e) return false; e.click(); return true })()`, js(scope), js(scope), js(label)))
	require.True(t, ok, "no control %q in %s", label, scope)
}

func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// screenshot writes a PNG of the viewport to docs/console/NAME.png when FERRY_CONSOLE_SCREENSHOTS=1 (make
// screenshots), else to the test's temporary directory: the pictures in the docs change only when asked to.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	// Let transitions and the caret settle, and hide the caret, so that pictures differ only by their data.
	eval[bool](t, ctx, `(() => { document.activeElement?.blur(); return true })()`)
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	dir := t.TempDir()
	if os.Getenv("FERRY_CONSOLE_SCREENSHOTS") == "1" {
		dir = filepath.Join("..", "..", "docs", "console")
		require.NoError(t, os.MkdirAll(dir, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}
