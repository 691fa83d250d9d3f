package tablepatterns_test

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// README's constructor table ("## Constructors and options") is what a team reads to
// build a pattern: every constructor it names must exist in its package with the stated
// type parameters and required arguments, every option it names must be a field of an
// options struct those constructors take, and every exported New* function of a pattern
// package must be in its row.
func TestREADMEConstructorTableMatchesTheCode(t *testing.T) {
	rows, err := readmeTable("README.md", "## Constructors and options")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal("README has no constructor table")
	}
	seen := map[string]bool{}
	for _, row := range rows {
		if len(row) < 4 {
			t.Errorf("row %q: %d cells, want at least 4", row, len(row))
			continue
		}
		dir := firstCode(row[0])
		if !strings.HasPrefix(dir, "patterns/") {
			t.Errorf("row %q: the first cell names no package under patterns/", row[0])
			continue
		}
		pkg, err := loadPackage(dir)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		seen[dir] = true
		for _, msg := range pkg.checkRow(row[1], row[3]) {
			t.Errorf("README's constructor table, row %s: %s", dir, msg)
		}
		named := strings.Join(row, " ")
		for _, name := range pkg.constructors() {
			if !regexp.MustCompile("`" + name + `[\[(]`).MatchString(named) {
				t.Errorf("README's constructor table, row %s: the exported constructor %s is not in it", dir, name)
			}
		}
	}
	entries, err := os.ReadDir("patterns")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		dir := "patterns/" + e.Name()
		if !e.IsDir() || e.Name() == "internal" || seen[dir] {
			continue
		}
		pkg, err := loadPackage(dir)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		if cs := pkg.constructors(); len(cs) > 0 {
			t.Errorf("README's constructor table has no row for %s, which exports %s", dir, strings.Join(cs, ", "))
		}
	}
}

// README's "Same operation, same shape" table states each package's signature of Get,
// Lookup, Find, Delete and List: every signature it gives must exist with that many
// arguments, and every Get, Lookup, Find and Delete of a pattern package must be in it.
func TestREADMESameShapeTableMatchesTheCode(t *testing.T) {
	rows, err := readmeTable("README.md", "## Same operation, same shape")
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]string{} // operation: its cell of signatures
	for _, row := range rows {
		if len(row) != 3 {
			t.Errorf("row %q: %d cells, want 3", row, len(row))
			continue
		}
		ops[row[0]] = row[2]
	}
	pkgs := map[string]*pkgAPI{}
	load := func(name string) *pkgAPI {
		if p, ok := pkgs[name]; ok {
			return p
		}
		dir := "patterns/" + name
		if name == "repo" {
			dir = "repo"
		}
		p, err := loadPackage(dir)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
		}
		pkgs[name] = p
		return p
	}
	sig := regexp.MustCompile(`^(\w+)\.(\w+)(?:\[[^\]]*\])?(?:\.(\w+))?\((.*)\)$`)
	for _, op := range []string{"Get", "Lookup", "Find", "Delete", "List"} {
		cell, ok := ops[op]
		if !ok {
			t.Errorf("the table has no row %s", op)
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
			c := sig.FindStringSubmatch(m[1])
			if c == nil {
				continue // a value in code, such as empid_000223
			}
			p := load(c[1])
			if p == nil {
				continue
			}
			name, ft := c[2], p.funcs[c[2]]
			if c[3] != "" {
				name, ft = c[2]+"."+c[3], p.byType[c[2]][c[3]]
			}
			if ft == nil {
				t.Errorf("%s row: %s: package %s has no %s", op, m[1], c[1], name)
				continue
			}
			if op != "List" && !strings.HasSuffix(name, op) {
				t.Errorf("%s row: %s is not a %s", op, m[1], op)
			}
			if got, want := count(ft.Params), len(splitArgs(c[4])); got != want {
				t.Errorf("%s row: %s takes %d arguments, README gives %d", op, m[1], got, want)
			}
		}
		if op == "List" {
			continue
		}
		// Every pattern package's operation of that name is in the row.
		entries, err := os.ReadDir("patterns")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.IsDir() || e.Name() == "internal" {
				continue
			}
			p := load(e.Name())
			if p == nil {
				continue
			}
			var want []string
			if p.funcs[op] != nil {
				want = append(want, e.Name()+"."+op)
			}
			for typ, ms := range p.byType {
				if ms[op] != nil {
					want = append(want, e.Name()+"."+typ+"."+op)
				}
			}
			for _, w := range want {
				if !regexp.MustCompile("`" + regexp.QuoteMeta(w) + `[\[(]`).MatchString(cell) {
					t.Errorf("%s row: %s is not in it", op, w)
				}
			}
		}
	}
}

// readmeTable returns the cells of the first Markdown table after the heading, without
// its header and separator rows.
func readmeTable(path, heading string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows [][]string
	in, header := false, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == heading:
			in = true
		case !in:
		case strings.HasPrefix(line, "|"):
			if header < 2 { // the header row and the |---| row
				header++
				continue
			}
			rows = append(rows, splitRow(line))
		case len(rows) > 0:
			return rows, sc.Err()
		case strings.HasPrefix(line, "## "):
			return nil, fmt.Errorf("%s: no table under %q", path, heading)
		}
	}
	return rows, sc.Err()
}

// splitRow splits a table row into its cells; a "|" inside backquotes is text.
func splitRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(line), "|"), "|")
	var cells []string
	var cur strings.Builder
	code := false
	for _, r := range line {
		switch {
		case r == '`':
			code = !code
		case r == '|' && !code:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
			continue
		}
		cur.WriteRune(r)
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

var codeSpan = regexp.MustCompile("`([^`]*)`")

// firstCode returns the text of the first code span of s.
func firstCode(s string) string {
	if m := codeSpan.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// call is a function as README writes it: `New[T](table, layout, opts)`.
var call = regexp.MustCompile(`^([A-Z]\w*)(?:\[([^\]]*)\])?\((.*)\)$`)

// pkgAPI is what a package declares, read from its sources (tests left out).
type pkgAPI struct {
	dir     string
	funcs   map[string]*ast.FuncType   // top-level functions
	methods map[string][]*ast.FuncType // methods by name, on any type
	byType  map[string]map[string]*ast.FuncType
	structs map[string]*ast.StructType // struct types by name
}

func loadPackage(dir string) (*pkgAPI, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		return nil, err
	}
	p := &pkgAPI{dir: dir, funcs: map[string]*ast.FuncType{}, methods: map[string][]*ast.FuncType{},
		byType: map[string]map[string]*ast.FuncType{}, structs: map[string]*ast.StructType{}}
	for _, astPkg := range pkgs {
		var files []*ast.File
		for _, f := range astPkg.Files {
			files = append(files, f)
		}
		d, err := doc.NewFromFiles(fset, files, "example.com/"+filepath.ToSlash(dir))
		if err != nil {
			return nil, err
		}
		for _, f := range d.Funcs {
			p.funcs[f.Name] = f.Decl.Type
		}
		for _, ty := range d.Types {
			for _, f := range ty.Funcs {
				p.funcs[f.Name] = f.Decl.Type
			}
			p.byType[ty.Name] = map[string]*ast.FuncType{}
			for _, m := range ty.Methods {
				p.methods[m.Name] = append(p.methods[m.Name], m.Decl.Type)
				p.byType[ty.Name][m.Name] = m.Decl.Type
			}
			for _, spec := range ty.Decl.Specs {
				if ts, ok := spec.(*ast.TypeSpec); ok {
					if st, ok := ts.Type.(*ast.StructType); ok {
						p.structs[ts.Name.Name] = st
					}
				}
			}
		}
	}
	if len(p.funcs) == 0 && len(p.structs) == 0 {
		return nil, fmt.Errorf("no Go package in %s", dir)
	}
	return p, nil
}

// constructors returns the package's exported New* functions, sorted.
func (p *pkgAPI) constructors() []string {
	var out []string
	for name := range p.funcs {
		if strings.HasPrefix(name, "New") {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// checkRow checks the constructor cell (the functions and methods it names) and the
// options cell (the fields it names) of one row.
func (p *pkgAPI) checkRow(ctors, options string) []string {
	var msgs []string
	optTypes := map[string]bool{}
	for _, m := range codeSpan.FindAllStringSubmatch(ctors, -1) {
		c := call.FindStringSubmatch(m[1])
		if c == nil {
			continue // prose in code, such as a type name
		}
		name, tparams, args := c[1], c[2], splitArgs(c[3])
		ft := p.funcs[name]
		if ft == nil {
			if ms := p.methods[name]; len(ms) > 0 {
				ft = ms[0]
			}
		}
		if ft == nil {
			msgs = append(msgs, fmt.Sprintf("%s: no function or method %s in the package", m[1], name))
			continue
		}
		if got, want := count(ft.TypeParams), len(splitArgs(tparams)); got != want {
			msgs = append(msgs, fmt.Sprintf("%s: %s has %d type parameters, README gives %d", m[1], name, got, want))
		}
		opt := optionsType(ft)
		if opt != "" {
			optTypes[opt] = true
		}
		stated := len(args)
		if stated > 0 && args[stated-1] == "opts" {
			stated--
			if opt == "" {
				msgs = append(msgs, fmt.Sprintf("%s: README passes opts, but %s takes no options", m[1], name))
			}
		} else if opt != "" {
			msgs = append(msgs, fmt.Sprintf("%s: %s takes *%s last, README passes no opts", m[1], name, opt))
		}
		if got := required(ft); got != stated {
			msgs = append(msgs, fmt.Sprintf("%s: %s takes %d required arguments, README gives %d", m[1], name, got, stated))
		}
	}
	for _, m := range codeSpan.FindAllStringSubmatch(dropParens(options), -1) {
		field := m[1]
		if !regexp.MustCompile(`^[A-Z]\w*(\.[A-Z]\w*)?$`).MatchString(field) {
			continue
		}
		if typ, f, ok := strings.Cut(field, "."); ok {
			if !hasField(p.structs[typ], f) {
				msgs = append(msgs, fmt.Sprintf("option %s: %s has no field %s", field, typ, f))
			}
			continue
		}
		found := false
		for typ := range optTypes {
			found = found || hasField(p.structs[typ], field)
		}
		if !found {
			msgs = append(msgs, fmt.Sprintf("option %s is a field of none of %s", field, strings.Join(slices.Sorted(mapKeys(optTypes)), ", ")))
		}
	}
	return msgs
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// splitArgs splits "a, b[c, d], e" at the commas outside brackets; "" gives none.
func splitArgs(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// dropParens removes the parenthesized remarks of a cell (defaults, notes), which may name
// other things than options.
func dropParens(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// count returns the number of names a field list declares (an unnamed field counts one).
func count(fl *ast.FieldList) int {
	if fl == nil {
		return 0
	}
	n := 0
	for _, f := range fl.List {
		n += max(len(f.Names), 1)
	}
	return n
}

// optionsType returns the name of the struct behind a last parameter *XOptions (or
// *Options), or "".
func optionsType(ft *ast.FuncType) string {
	if ft.Params == nil || len(ft.Params.List) == 0 {
		return ""
	}
	star, ok := ft.Params.List[len(ft.Params.List)-1].Type.(*ast.StarExpr)
	if !ok {
		return ""
	}
	id, ok := star.X.(*ast.Ident)
	if !ok || !strings.HasSuffix(id.Name, "Options") {
		return ""
	}
	return id.Name
}

// required returns the number of parameters before the options, if any.
func required(ft *ast.FuncType) int {
	n := count(ft.Params)
	if optionsType(ft) != "" {
		n--
	}
	return n
}

func hasField(st *ast.StructType, name string) bool {
	if st == nil {
		return false
	}
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			if n.Name == name {
				return true
			}
		}
	}
	return false
}
