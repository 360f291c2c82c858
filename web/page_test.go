package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	// scriptTag is a script element of the page: a module, by its src.
	scriptTag = regexp.MustCompile(`<script\b[^>]*>`)
	moduleSrc = regexp.MustCompile(`^<script type="module" src="([^"]+)"></script>$`)
	// importStmt is a static import (or re-export) of a module, at the
	// start of a line: `import { a } from "./x.js";`, `import "./x.js";`,
	// `export { a } from "./x.js";`.
	importStmt = regexp.MustCompile(`(?m)^(?:import\s[^;"]*\sfrom|import|export\s*(?:\*|\{[^;"}]*\})\s*from)\s*"([^"]*)";`)
	// importKw starts what may be an import or a re-export.
	importKw = regexp.MustCompile(`(?m)^(?:import\b|export\s*(?:\*|\{[^;"}]*\})\s*from\b)`)
)

// pageModules fetches the page at base without the token and every module
// it loads, following each module's imports, and returns them by path.
// Every one must be served as the shell is: 200 without the token, as
// text/javascript, with the page's CSP and no-store; a module imported
// and not served, or an import the walk cannot follow (a dynamic import(),
// a bare specifier, an import of another origin), is an error.
func pageModules(base string) (map[string][]byte, error) {
	get := func(p string) (*http.Response, []byte, error) {
		resp, err := http.Get(base + p)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}
	resp, page, err := get("/")
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/: %s", resp.Status)
	}
	var todo []string
	for _, tag := range scriptTag.FindAllString(string(page), -1) {
		m := moduleSrc.FindStringSubmatch(tag + "</script>")
		if m == nil {
			return nil, fmt.Errorf("the page has a script that is not a module loaded by its src: %s", tag)
		}
		todo = append(todo, path.Join("/", m[1]))
	}
	if len(todo) == 0 {
		return nil, fmt.Errorf("the page loads no module")
	}
	mods := map[string][]byte{}
	for len(todo) > 0 {
		p := todo[0]
		todo = todo[1:]
		if _, ok := mods[p]; ok {
			continue
		}
		resp, js, err := get(p)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s, imported by the page, is not served: %s", p, resp.Status)
		}
		h := resp.Header
		if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
			return nil, fmt.Errorf("%s: Content-Type %q, not text/javascript", p, ct)
		}
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
			return nil, fmt.Errorf("%s: Content-Security-Policy %q", p, csp)
		}
		if h.Get("Cache-Control") != "no-store" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("ETag") != "" || h.Get("Last-Modified") != "" {
			return nil, fmt.Errorf("%s: cached or sniffed: %v", p, h)
		}
		mods[p] = js
		src := string(js)
		if strings.Contains(src, "import(") || strings.Contains(src, "importScripts") {
			return nil, fmt.Errorf("%s: a dynamic import, which this walk cannot follow", p)
		}
		imports := importStmt.FindAllStringSubmatch(src, -1)
		if n := len(importKw.FindAllString(src, -1)); n != len(imports) {
			return nil, fmt.Errorf("%s: %d import statements, %d of them read as `import … from \"./x.js\";`", p, n, len(imports))
		}
		for _, m := range imports {
			spec := m[1]
			if !strings.HasPrefix(spec, "./") || !strings.HasSuffix(spec, ".js") || strings.Contains(spec, "..") {
				return nil, fmt.Errorf("%s imports %q: only ./name.js, a module of the page", p, spec)
			}
			todo = append(todo, path.Join(path.Dir(p), spec))
		}
	}
	return mods, nil
}

// TestEveryModuleServed: the page's script is native modules; every module
// it imports, directly or not, is served without the token as
// text/javascript under the page's CSP and no-store, and every script in
// assets is one the page loads (none left out of the walk, so none left
// out of the checks on the modules).
func TestEveryModuleServed(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeagent.Demo(), nil)
	mods, err := pageModules(r.hs.URL)
	require.NoError(t, err)
	files, err := os.ReadDir("assets")
	require.NoError(t, err)
	var onDisk, loaded []string
	for _, f := range files {
		if strings.HasSuffix(f.Name(), ".js") {
			onDisk = append(onDisk, "/"+f.Name())
		}
	}
	for p := range mods {
		loaded = append(loaded, p)
	}
	slices.Sort(loaded)
	assert.Equal(t, onDisk, loaded, "the scripts in assets and the modules the page loads")
	assert.Greater(t, len(loaded), 1, "the walk followed the entry module's imports")
	// Without the token, as the browser fetches a module (no header).
	for _, p := range loaded {
		resp := r.request(http.MethodGet, p, "", map[string]string{"Authorization": ""})
		assert.Equal(t, http.StatusOK, resp.StatusCode, p)
	}
}

// TestModuleWalkFails: the walk fails on a module the server does not
// serve, on a classic or inline script, on a bare or foreign import and on
// a dynamic one, so that TestEveryModuleServed can fail.
func TestModuleWalkFails(t *testing.T) {
	t.Parallel()
	const entry = `<script type="module" src="app.js"></script>`
	for _, c := range []struct {
		site map[string]string
		want string
	}{
		{map[string]string{"/": entry, "/app.js": "import { a } from \"./x.js\";\nimport {\n  b,\n} from \"./gone.js\";", "/x.js": ``},
			"/gone.js, imported by the page, is not served"},
		{map[string]string{"/": entry, "/app.js": `export * from "./gone.js";`}, "/gone.js, imported by the page, is not served"},
		{map[string]string{"/": `<script type="module" src="gone.js"></script>`}, "/gone.js, imported by the page, is not served"},
		{map[string]string{"/": `<script src="app.js"></script>`, "/app.js": ``}, "not a module loaded by its src"},
		{map[string]string{"/": `<script type="module">import "./app.js";</script>`, "/app.js": ``}, "not a module loaded by its src"},
		{map[string]string{"/": entry, "/app.js": `import { a } from "lib";`}, `imports "lib"`},
		{map[string]string{"/": entry, "/app.js": `import "https://cdn.example/x.js";`}, `imports "https://cdn.example/x.js"`},
		{map[string]string{"/": entry, "/app.js": `const m = await import("./x.js");`}, "a dynamic import"},
		{map[string]string{"/": entry, "/app.js": "import {\n  a } from './x.js';"}, "1 import statements, 0 of them"},
		{map[string]string{"/": entry, "/app.js": `x`, "ctype": "text/plain"}, "not text/javascript"},
	} {
		site := c.site
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, ok := site[r.URL.Path]
			if !ok {
				http.NotFound(w, r)
				return
			}
			ctype := "text/javascript"
			if c, ok := site["ctype"]; ok {
				ctype = c
			}
			w.Header().Set("Content-Type", ctype)
			w.Header().Set("Content-Security-Policy", "script-src 'self'")
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			io.WriteString(w, body)
		}))
		_, err := pageModules(hs.URL)
		if assert.Error(t, err, c.want) {
			assert.Contains(t, err.Error(), c.want)
		}
		hs.Close()
	}
}
