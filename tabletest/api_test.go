package tabletest_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// The public types are declared in this package, not aliases of another's, so that
// `go doc tabletest.Server` shows their fields and methods; and the package's API names
// no internal package.
func TestPublicTypesAreDeclaredHere(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	pkg := pkgs["tabletest"]
	if pkg == nil {
		t.Fatalf("no package tabletest: %v", pkgs)
	}
	types := map[string]bool{}
	methods := map[string]int{}
	for _, f := range pkg.Files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.IsExported() {
						if ts.Assign != 0 {
							t.Errorf("type %s is an alias: go doc shows none of its fields or methods", ts.Name.Name)
						}
						types[ts.Name.Name] = true
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil && d.Name.IsExported() {
					recv := d.Recv.List[0].Type
					if st, ok := recv.(*ast.StarExpr); ok {
						recv = st.X
					}
					if id, ok := recv.(*ast.Ident); ok {
						methods[id.Name]++
					}
				}
			}
		}
		for _, imp := range f.Imports {
			if strings.Contains(imp.Path.Value, "/internal/tabletest") {
				t.Errorf("%s imports %s", fset.Position(f.Package).Filename, imp.Path.Value)
			}
		}
	}
	for _, name := range []string{"Options", "Server", "Clients", "Env", "Credential"} {
		if !types[name] {
			t.Errorf("type %s is not declared in package tabletest", name)
		}
	}
	for _, name := range []string{"Server", "Env", "Credential"} {
		if methods[name] == 0 {
			t.Errorf("type %s has no methods declared in package tabletest", name)
		}
	}
}
