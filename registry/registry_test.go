package registry

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/acphost/acphost/internal/testutil"
)

// The embedded snapshot parses and names Devin with its Linux binaries.
func TestEmbeddedSnapshotParses(t *testing.T) {
	r := Embedded()
	if len(r.Agents) != 39 {
		t.Errorf("%d agents, want the snapshot's 39", len(r.Agents))
	}
	d, ok := r.Agent("devin")
	if !ok {
		t.Fatal("no devin in the snapshot")
	}
	for _, p := range []string{"linux-x86_64", "linux-aarch64", "darwin-aarch64"} {
		tg, ok := d.Distribution.Binary[p]
		if !ok || tg.Cmd != "./bin/devin" || !slices.Equal(tg.Args, []string{"acp"}) || !strings.HasPrefix(tg.Archive, "https://") {
			t.Errorf("devin %s: %+v", p, tg)
		}
		if f, err := archiveFormat(tg.Archive); err != nil || f != formatTarGz {
			t.Errorf("devin %s: format %q, %v", p, f, err)
		}
	}
	if d.Kind("linux-x86_64") != KindBinary || d.Kind("plan9-386") != "" {
		t.Errorf("kinds %q %q", d.Kind("linux-x86_64"), d.Kind("plan9-386"))
	}
	// Every binary of the snapshot has a format this package unpacks and a
	// cmd inside its archive.
	for _, a := range r.Agents {
		for p, tg := range a.Distribution.Binary {
			if _, err := archiveFormat(tg.Archive); err != nil {
				t.Errorf("%s %s: %v", a.ID, p, err)
			}
			if _, err := cmdPath(tg.Cmd); err != nil {
				t.Errorf("%s %s: %v", a.ID, p, err)
			}
		}
	}
}

// Members this package does not know survive a read and a write, at
// every level.
func TestParseKeepsUnknownMembers(t *testing.T) {
	doc := `{"version":"1.0.0","extensions":[{"id":"x"}],"agents":[{"id":"a","name":"A","version":"1.0.0","description":"d",
		"future":{"k":1},"distribution":{"docker":{"image":"i"},"npx":{"package":"p@1","cmd":"c","args":["--acp"],"flavour":"x"},
		"binary":{"linux-riscv64":{"archive":"https://h/a.tgz","cmd":"./a","signature":"s"}}}}]}`
	r, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"extensions":[{"id":"x"}]`, `"future":{"k":1}`, `"docker":{"image":"i"}`, `"flavour":"x"`, `"signature":"s"`, `"linux-riscv64"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("written again without %s:\n%s", want, out)
		}
	}
	again, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(again); string(b) != string(out) {
		t.Errorf("not stable:\n%s\n%s", out, b)
	}
}

// A malformed registry is one error saying where and what.
func TestParseMalformedIsOneClearError(t *testing.T) {
	agent := func(body string) string {
		return `{"version":"1.0.0","agents":[{"id":"ok","name":"n","version":"1.0.0","description":"d","distribution":{"npx":{"package":"p"}}},` + body + `]}`
	}
	for _, tc := range []struct{ doc, want string }{
		{`not json`, "is malformed: line 1:3: invalid character"},
		{"{\"agents\": [\n  {\"id\": 1}]}", `is malformed: agents[0]: id is a JSON number, want string`},
		{`{"agents": 7}`, `is malformed: agents is a JSON number`},
		{`[]`, `is malformed: the document is a JSON array`},
		{`{"version":"1.0.0"}`, `is malformed: no "agents" array`},
		{agent(`{"id":"Bad_Id","version":"1","distribution":{"npx":{"package":"p"}}}`), `agents[1] ("Bad_Id"): id "Bad_Id": want lowercase`},
		{agent(`{"id":"ok","version":"1","distribution":{"npx":{"package":"p"}}}`), `agents[1] ("ok"): a second agent of this id`},
		{agent(`{"id":"v","version":"../../x","distribution":{"npx":{"package":"p"}}}`), `agents[1] ("v"): version "../../x"`},
		{agent(`{"id":"v","version":"1","distribution":{}}`), `distribution: none of npx, uvx, binary`},
		{agent(`{"id":"v","version":"1","distribution":{"npx":{"package":"--eval=x"}}}`), `distribution.npx: package "--eval=x"`},
		{agent(`{"id":"v","version":"1","distribution":{"binary":{"linux-x86_64":{"archive":"ftp://h/a.tgz","cmd":"a"}}}}`), `distribution.binary.linux-x86_64: archive "ftp://h/a.tgz": want an https URL`},
		{agent(`{"id":"v","version":"1","distribution":{"binary":{"linux-x86_64":{"archive":"https://h/a.tgz"}}}}`), `distribution.binary.linux-x86_64: no cmd`},
		{agent(`{"id":"v","version":"1","distribution":{"binary":{"linux-x86_64":{"archive":"https://h/a.tgz","cmd":"../../bin/sh"}}}}`), `cmd "../../bin/sh": want a path inside the unpacked archive`},
		{agent(`{"id":"v","version":"1","distribution":{"binary":{"linux-x86_64":{"archive":"https://h/a.tgz","cmd":"/bin/sh"}}}}`), `cmd "/bin/sh": want a path inside`},
		{agent(`{"id":"v","version":"1","distribution":{"binary":{"linux-x86_64":{"archive":"https://h/a.tgz","cmd":"a","sha256":"xyz"}}}}`), `sha256 "xyz": want 64 hex digits`},
		{agent(`{"id":"v","version":"1","distribution":{"npx":{"package":"p","env":{"A=B":"c"}}}}`), `distribution.npx: env "A=B"`},
	} {
		_, err := Parse([]byte(tc.doc))
		var me *MalformedError
		if !errors.Is(err, ErrMalformed) || !errors.As(err, &me) || !strings.Contains(err.Error(), tc.want) || strings.Count(err.Error(), "\n") != 0 {
			t.Errorf("%.60s…: %v\nwant one line with %q", tc.doc, err, tc.want)
		}
	}
}

// A malformed file names itself; Load says so once.
func TestLoadFileNamesIt(t *testing.T) {
	p := filepath.Join(t.TempDir(), "reg.json")
	os.WriteFile(p, []byte(`{"agents":[{"id":"x"}]}`), 0o644)
	_, err := Load(context.Background(), Source{Location: p})
	if !errors.Is(err, ErrMalformed) || !strings.HasPrefix(err.Error(), "registry "+p+" is malformed: agents[0] (\"x\"): version") {
		t.Errorf("%v", err)
	}
}

func TestPackageCommands(t *testing.T) {
	for _, tc := range []struct {
		kind string
		p    Package
		want string
	}{
		{KindNPX, Package{Package: "@s/p@1.2.3", Args: []string{"--acp"}}, "npx -y @s/p@1.2.3 --acp"},
		{KindNPX, Package{Package: "@s/p@1.2.3", Cmd: "p-acp", Args: []string{"x"}}, "npx -y --package @s/p@1.2.3 p-acp x"},
		{KindUVX, Package{Package: "fast-agent-acp==0.10.1", Args: []string{"-x"}}, "uvx fast-agent-acp==0.10.1 -x"},
		{KindUVX, Package{Package: "pkg==1", Cmd: "serve"}, "uvx --from pkg==1 serve"},
	} {
		c := packageCommand(tc.kind, tc.p)
		if got := strings.Join(append([]string{c.Path}, c.Args...), " "); got != tc.want {
			t.Errorf("%s %+v: %q, want %q", tc.kind, tc.p, got, tc.want)
		}
	}
	// An npx agent resolves without a download, with its environment.
	r := Embedded()
	a, _ := r.Agent("factory-droid")
	c, downloaded, err := (&Cache{Dir: t.TempDir()}).Command(context.Background(), a, true)
	if err != nil || downloaded || c.Path != "npx" || !slices.Contains(c.Env, "DROID_DISABLE_AUTO_UPDATE=true") {
		t.Errorf("%+v %v %v", c, downloaded, err)
	}
}

func TestPlatformNames(t *testing.T) {
	for _, tc := range [][3]string{{"linux", "amd64", "linux-x86_64"}, {"linux", "arm64", "linux-aarch64"},
		{"darwin", "arm64", "darwin-aarch64"}, {"windows", "amd64", "windows-x86_64"}} {
		if got := platformOf(tc[0], tc[1]); got != tc[2] {
			t.Errorf("%s/%s: %s", tc[0], tc[1], got)
		}
	}
}

// Refresh keeps the fetched registry with its ETag and asks with it next
// time; an unchanged registry is a 304, and a URL source falls back to
// the kept copy when the fetch fails.
func TestRefreshUsesETag(t *testing.T) {
	s := testutil.NewFileServer(t)
	u := s.Put("/registry.json", registryDoc(t, Agent{ID: "one", Name: "One", Version: "1.0.0", Description: "d",
		Distribution: Distribution{NPX: &Package{Package: "one@1.0.0"}}}))
	s.SetETag("/registry.json", `"v1"`)
	src := Source{Location: u, CacheDir: t.TempDir(), Client: s.Client()}
	ctx := context.Background()
	r, changed, err := Refresh(ctx, src)
	if err != nil || !changed || len(r.Agents) != 1 {
		t.Fatalf("first refresh: %v %v %v", r, changed, err)
	}
	r, changed, err = Refresh(ctx, src)
	if err != nil || changed || len(r.Agents) != 1 || s.IfNoneMatch("/registry.json") != `"v1"` {
		t.Fatalf("second refresh: %v %v %v; If-None-Match %q", r, changed, err, s.IfNoneMatch("/registry.json"))
	}
	s.Close()
	r, err = Load(ctx, src)
	if err != nil || len(r.Agents) != 1 || !strings.Contains(r.Origin, "kept copy") {
		t.Fatalf("offline: %v %v", r, err)
	}
	if _, _, err := Refresh(ctx, src); !errors.Is(err, ErrDownload) {
		t.Errorf("refresh offline: %v", err)
	}
}

// Without a fetched official registry, Load uses the embedded snapshot and
// no network.
func TestLoadOfficialOffline(t *testing.T) {
	r, err := Load(context.Background(), Source{CacheDir: t.TempDir(), Client: &http.Client{Transport: failingTransport{t}}})
	if err != nil || len(r.Agents) != 39 || !strings.Contains(r.Origin, "embedded snapshot") {
		t.Fatalf("%v %v", r, err)
	}
}

type failingTransport struct{ t *testing.T }

func (f failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.t.Errorf("a request to %s", r.URL)
	return nil, errors.New("no network")
}
