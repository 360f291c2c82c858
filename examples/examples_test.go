// Package examples_test checks that every program under examples/ can be
// copied into a user's own module: each directory is one main package that
// imports only the standard library and the public packages of
// github.com/acphost/acphost (no internal package, no shared helper of the
// examples).
package examples_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/acphost/acphost"

// thirdParty are the packages outside this module an example may import,
// each because a public API of the module takes its types.
var thirdParty = map[string]string{
	"github.com/modelcontextprotocol/go-sdk/mcp": "hosttools.New takes an *mcp.Server",
}

func TestExamplesAreCopyable(t *testing.T) {
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() || path == "." {
			return nil
		}
		if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return filepath.SkipDir // the go command ignores these
		}
		dirs = append(dirs, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no example directories found")
	}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Errorf("%s: a directory without Go files (an example is one directory of one main package)", dir)
			continue
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
			if err != nil {
				t.Errorf("%s: %v", file, err)
				continue
			}
			if f.Name.Name != "main" {
				t.Errorf("%s: package %s; an example is a main package", file, f.Name.Name)
			}
			for _, imp := range f.Imports {
				path, err := strconv.Unquote(imp.Path.Value)
				if err != nil {
					t.Errorf("%s: import %s: %v", file, imp.Path.Value, err)
					continue
				}
				if why := forbidden(path); why != "" {
					t.Errorf("%s imports %s: %s", file, path, why)
				}
			}
		}
	}
}

// forbidden says why an example may not import path, or "" if it may.
func forbidden(path string) string {
	elems := strings.Split(path, "/")
	for _, e := range elems {
		if e == "internal" {
			return "an internal package cannot be imported from a user's module"
		}
	}
	switch {
	case !strings.Contains(elems[0], "."): // the standard library's paths have no dot in their first element
		return ""
	case path == module || strings.HasPrefix(path, module+"/"):
		if strings.HasPrefix(path, module+"/examples") {
			return "an example may not depend on another directory of examples/"
		}
		return ""
	case thirdParty[path] != "":
		return ""
	}
	return "only the standard library and " + module + "/... may be imported"
}
