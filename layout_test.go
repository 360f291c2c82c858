package acphost_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The package's layout is held by this test, as its imports are by
// deps_test.go: a reader finds every error in errors.go and in the package
// doc's table, every exported method in its type's file, and the
// vocabulary (the types a caller reads) apart from the runtime that uses
// it.

// vocabularyFiles declare what callers read and write — requests,
// answers, updates, events, errors, policies — and nothing that runs.
var vocabularyFiles = []string{
	"doc.go", "elicitation.go", "errors.go", "permission.go", "policy.go", "stream.go",
}

// runtimeNames are the runtime's types and the wire package: a vocabulary
// file that names one has grown runtime into it.
var runtimeNames = []string{
	"agent", "dispatcher", "broker", "elicitor", "inflight", "replier", "turn", "sessionState",
	"sessionTable", "queue", "callbacks", "pendingPermission", "pendingElicitation", "wire",
}

// layoutFiles parses the package's non-test files.
func layoutFiles(t *testing.T) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name == "acphost" {
			files[name] = f
		}
	}
	return fset, files
}

// errorNames returns the exported sentinels (Err*) and exported types with
// an Error method declared in each file.
func errorNames(files map[string]*ast.File) map[string][]string {
	errorTypes := map[string]bool{}
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == "Error" && fd.Recv != nil {
				errorTypes[receiverName(fd)] = true
			}
		}
	}
	out := map[string][]string{}
	for name, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				switch spec := spec.(type) {
				case *ast.ValueSpec:
					for _, id := range spec.Names {
						if gd.Tok == token.VAR && id.IsExported() && strings.HasPrefix(id.Name, "Err") {
							out[name] = append(out[name], id.Name)
						}
					}
				case *ast.TypeSpec:
					if spec.Name.IsExported() && errorTypes[spec.Name.Name] {
						out[name] = append(out[name], spec.Name.Name)
					}
				}
			}
		}
	}
	return out
}

func receiverName(fd *ast.FuncDecl) string {
	typ := fd.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if idx, ok := typ.(*ast.IndexExpr); ok {
		typ = idx.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// TestErrorsLiveInErrorsGo: every exported error of the package is
// declared in errors.go, as the package doc says.
func TestErrorsLiveInErrorsGo(t *testing.T) {
	t.Parallel()
	_, files := layoutFiles(t)
	for name, errs := range errorNames(files) {
		if name != "errors.go" {
			t.Errorf("%s declares %v: errors belong in errors.go", name, errs)
		}
	}
}

// TestErrorsAreInTheDocTable: the package doc's table names every
// exported error.
func TestErrorsAreInTheDocTable(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	start := strings.Index(doc, "// # Errors")
	end := strings.Index(doc, "\npackage acphost")
	if start < 0 || end < start {
		t.Fatal("doc.go's package doc has no # Errors section")
	}
	table := doc[start:end]
	_, files := layoutFiles(t)
	for _, errs := range errorNames(files) {
		for _, e := range errs {
			if !regexp.MustCompile(`\b` + e + `\b`).MatchString(table) {
				t.Errorf("the package doc's error table does not name %s", e)
			}
		}
	}
}

// TestExportedMethodsLiveWithTheirType: an exported method is declared in
// the file that declares its receiver type, so ls and go to definition
// agree on where a type's behaviour is.
func TestExportedMethodsLiveWithTheirType(t *testing.T) {
	t.Parallel()
	_, files := layoutFiles(t)
	typeFile := map[string]string{}
	for name, f := range files {
		for _, d := range f.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
				for _, spec := range gd.Specs {
					typeFile[spec.(*ast.TypeSpec).Name.Name] = name
				}
			}
		}
	}
	for name, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !fd.Name.IsExported() {
				continue
			}
			recv := receiverName(fd)
			if home := typeFile[recv]; home != "" && home != name && ast.IsExported(recv) {
				t.Errorf("%s declares %s.%s; its type is in %s", name, recv, fd.Name.Name, home)
			}
		}
	}
}

// TestVocabularyNamesNoRuntime: the vocabulary files name none of the
// runtime's types, nor the wire package (comments aside): the runtime
// uses the vocabulary, never the other way.
func TestVocabularyNamesNoRuntime(t *testing.T) {
	t.Parallel()
	_, files := layoutFiles(t)
	for _, name := range vocabularyFiles {
		f := files[name]
		if f == nil {
			t.Errorf("vocabulary file %s is gone: update vocabularyFiles", name)
			continue
		}
		seen := map[string]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && slices.Contains(runtimeNames, id.Name) && !seen[id.Name] {
				seen[id.Name] = true
				t.Errorf("vocabulary file %s names the runtime's %s", name, id.Name)
			}
			return true
		})
	}
}

// TestSpecNamesOnlyTestsThatExist: every test SPEC.md names as a proof —
// in its invariants table and its sections — is a test function of this
// repository, so that a renamed or removed test cannot leave an invariant
// standing on nothing.
func TestSpecNamesOnlyTestsThatExist(t *testing.T) {
	spec, err := os.ReadFile("SPEC.md")
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	err = filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			defined[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile("`(?:[\\w./]+\\.)?(Test\\w+)`")
	for _, m := range named.FindAllSubmatch(spec, -1) {
		if name := string(m[1]); !defined[name] {
			t.Errorf("SPEC.md names %s, which no test file defines", name)
		}
	}
}
