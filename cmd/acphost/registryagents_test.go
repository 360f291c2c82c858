package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
	"github.com/acphost/acphost/registry"
)

// acphostArchive is a tar.gz of the acphost binary under test at
// bin/fake (stored, not deflated: it is large), and a VERSION file.
func acphostArchive(t *testing.T, version string) []byte {
	bin, err := os.ReadFile(binPath)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.NoCompression)
	tw := tar.NewWriter(zw)
	for _, f := range []struct {
		name string
		mode int64
		body []byte
	}{{"bin/fake", 0o755, bin}, {"VERSION", 0o644, []byte(version)}} {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body)), Typeflag: tar.TypeReg})
		tw.Write(f.body)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return b.Bytes()
}

// fakeRegistry writes a registry file of one binary agent for this
// platform: the acphost binary playing script.
func fakeRegistry(t *testing.T, path, id, version, archive string, script fakeagent.Script) {
	_, _, env, err := fakeagent.Command(script)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	r := registry.Registry{Version: "1.0.0", Agents: []registry.Agent{{ID: id, Name: "Fake " + id, Version: version,
		Description: "the fake agent from an archive", Distribution: registry.Distribution{Binary: map[string]registry.Target{
			registry.Platform(): {Archive: archive, Cmd: "./bin/fake", Env: m},
			"plan9-mips":        {Archive: archive, Cmd: "./bin/fake"},
		}}}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRegistryAgentEndToEnd: acphost --registry FILE --agent ID installs
// a binary agent from a loopback HTTPS archive on first use, saying so,
// and runs a turn; the second run starts it from the cache without a
// download; acphost agents lists it installed; update installs the new
// version; remove removes them; login uses the agent's methods.
func TestRegistryAgentEndToEnd(t *testing.T) {
	s := testutil.NewFileServer(t)
	ca := s.CAFile(t)
	extra, _, _ := isolated(t)
	cacheDir := filepath.Join(t.TempDir(), "cache")
	extra = append(extra, "SSL_CERT_FILE="+ca, "XDG_CACHE_HOME="+cacheDir)
	regFile := filepath.Join(t.TempDir(), "registry.json")
	say := func(text string) fakeagent.Script {
		return fakeagent.Script{Name: "registry-fake", Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text(text))}, StopReason: "end_turn"}}}
	}
	fakeRegistry(t, regFile, "fake-agent", "1.0.0", s.Put("/1.0.0/fake.tar.gz", acphostArchive(t, "1.0.0")), say("answer from 1.0.0"))

	r := runIn(t, t.TempDir(), extra, nil, "", "--registry", regFile, "--agent", "fake-agent", "-p", "hi")
	if r.code != 0 || !strings.Contains(r.stdout, "answer from 1.0.0") {
		t.Fatalf("first run: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	installed := filepath.Join(cacheDir, "acphost", "agents", "fake-agent", "1.0.0")
	for _, want := range []string{"acphost: fake-agent is not installed: installing it (first use)", "installed fake-agent 1.0.0 in " + installed} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("first run's stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "\r") {
		t.Errorf("a progress line though stderr is no terminal:\n%q", r.stderr)
	}

	r = runIn(t, t.TempDir(), extra, nil, "", "--registry", regFile, "--agent", "fake-agent", "-p", "hi")
	if r.code != 0 || !strings.Contains(r.stdout, "answer from 1.0.0") || strings.Contains(r.stderr, "installing") || s.Count("/1.0.0/fake.tar.gz") != 1 {
		t.Fatalf("second run: exit %d, %d downloads; stdout:\n%s\nstderr:\n%s", r.code, s.Count("/1.0.0/fake.tar.gz"), r.stdout, r.stderr)
	}

	// The listing, through ACPHOST_REGISTRY this time.
	withEnv := append(extra[:len(extra):len(extra)], registry.EnvRegistry+"="+regFile)
	r = runIn(t, t.TempDir(), withEnv, nil, "", "agents")
	if r.code != 0 || !strings.Contains(r.stdout, "registry: "+regFile+" (1 agents") ||
		!strings.Contains(r.stdout, "fake-agent  1.0.0    binary        yes") || !strings.Contains(r.stdout, "claude ") {
		t.Errorf("agents: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = runIn(t, t.TempDir(), withEnv, nil, "", "agents", "--json")
	var list struct {
		Agents []struct {
			Name, From, Version, Distribution string
			Installed                         bool
			Command                           []string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || r.code != 0 {
		t.Fatalf("agents --json: exit %d, %v:\n%s", r.code, err, r.stdout)
	}
	found := false
	for _, a := range list.Agents {
		if a.Name == "fake-agent" {
			found = a.From == "registry" && a.Version == "1.0.0" && a.Distribution == "binary" && a.Installed &&
				len(a.Command) > 0 && a.Command[0] == filepath.Join(installed, "bin", "fake")
		}
	}
	if !found {
		t.Errorf("agents --json lacks the installed fake-agent:\n%s", r.stdout)
	}

	// A new version in the registry: update installs it beside the old.
	fakeRegistry(t, regFile, "fake-agent", "1.1.0", s.Put("/1.1.0/fake.tar.gz", acphostArchive(t, "1.1.0")), say("answer from 1.1.0"))
	r = runIn(t, t.TempDir(), extra, nil, "", "agents", "update", "fake-agent", "--registry", regFile)
	if r.code != 0 || !strings.Contains(r.stdout, "installed fake-agent 1.1.0") {
		t.Errorf("update: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = runIn(t, t.TempDir(), extra, nil, "", "--registry", regFile, "--agent", "fake-agent", "-p", "hi")
	if r.code != 0 || !strings.Contains(r.stdout, "answer from 1.1.0") || strings.Contains(r.stderr, "installing") {
		t.Errorf("after update: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = runIn(t, t.TempDir(), extra, nil, "", "agents", "install", "fake-agent", "--registry", regFile)
	if r.code != 0 || !strings.Contains(r.stdout, "fake-agent 1.1.0 is installed") {
		t.Errorf("install again: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = runIn(t, t.TempDir(), extra, nil, "", "agents", "remove", "fake-agent")
	if r.code != 0 || !strings.Contains(r.stdout, "removed fake-agent 1.0.0, 1.1.0") {
		t.Errorf("remove: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(installed); !os.IsNotExist(err) {
		t.Errorf("after remove: %v", err)
	}

	// login --agent ID serves the agent's own login methods: its terminal
	// login runs the installed binary with the method's arguments.
	login, authFile := loginScript(t, false)
	fakeRegistry(t, regFile, "fake-auth", "2.0.0", s.Put("/2.0.0/fake.tar.gz", acphostArchive(t, "2.0.0")), *login)
	r = runIn(t, t.TempDir(), extra, nil, "", "login", "--yes", "--registry", regFile, "--agent", "fake-auth")
	if r.code != 0 || !strings.Contains(r.stdout, "logged in with tui") || !strings.Contains(r.stdout, filepath.Join("fake-auth", "2.0.0", "bin", "fake")) ||
		!strings.Contains(r.stderr, "installing it (first use)") {
		t.Errorf("login: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(authFile); err != nil {
		t.Errorf("the agent's login did not run: %v", err)
	}
}

// A registry agent with no binary for this platform is a clear error
// naming the platforms it has; a malformed registry is one clear error.
func TestRegistryAgentErrors(t *testing.T) {
	extra, _, _ := isolated(t)
	extra = append(extra, "XDG_CACHE_HOME="+t.TempDir())
	regFile := filepath.Join(t.TempDir(), "registry.json")
	os.WriteFile(regFile, []byte(`{"version":"1.0.0","agents":[{"id":"elsewhere","name":"E","version":"1.0.0","description":"d",
		"distribution":{"binary":{"plan9-mips":{"archive":"https://example.com/a.tgz","cmd":"a"},"aix-ppc64":{"archive":"https://example.com/a.tgz","cmd":"a"}}}}]}`), 0o644)
	r := runIn(t, t.TempDir(), extra, nil, "", "--registry", regFile, "--agent", "elsewhere", "-p", "hi")
	if r.code != exitUsage || !strings.Contains(r.stderr, "agent elsewhere has no distribution for "+registry.Platform()+" (no npx or uvx package either); its binaries are for: aix-ppc64, plan9-mips") {
		t.Errorf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	os.WriteFile(regFile, []byte(`{"version":"1.0.0","agents":[{"id":"x","version":"1.0.0"}]}`), 0o644)
	r = runIn(t, t.TempDir(), extra, nil, "", "--registry", regFile, "--agent", "x", "-p", "hi")
	if r.code != exitUsage || !strings.Contains(r.stderr, "registry "+regFile+` is malformed: agents[0] ("x"): distribution: none of npx, uvx, binary`) {
		t.Errorf("malformed: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	// A failed download is no usage error: exit 1, said once, nothing installed.
	s := testutil.NewFileServer(t)
	ca := s.CAFile(t)
	fakeRegistry(t, regFile, "gone", "1.0.0", s.URL+"/missing.tar.gz", fakeagent.Script{})
	r = runIn(t, t.TempDir(), append(extra, "SSL_CERT_FILE="+ca), nil, "", "--registry", regFile, "--agent", "gone", "-p", "hi")
	if r.code != exitFailed || !strings.Contains(r.stderr, "acphost: installing gone 1.0.0: registry: download failed: "+s.URL+"/missing.tar.gz: HTTP 404 Not Found\n") ||
		strings.Contains(r.stderr, "--help") {
		t.Errorf("404: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	// … and says what to do next (issue 39: offline, --agent devin said
	// only what failed).
	if host := strings.TrimPrefix(s.URL, "https://"); !strings.Contains(r.stderr, "acphost: nothing was installed: run the same command again once "+host+
		" can be reached (a proxy is taken from HTTPS_PROXY), or install gone yourself and run it as: acphost -- ") {
		t.Errorf("404: no next step; stderr:\n%s", r.stderr)
	}
	// A plain-http archive off loopback makes the registry malformed: it
	// is refused when the registry is read, before any connection.
	fakeRegistry(t, regFile, "plain", "1.0.0", "http://example.com/a.tar.gz", fakeagent.Script{})
	r = runIn(t, t.TempDir(), extra, nil, "", "--registry", regFile, "--agent", "plain", "-p", "hi")
	if r.code != exitUsage || !strings.Contains(r.stderr, `is malformed: agents[0] ("plain"): distribution.binary.`+registry.Platform()+`: archive "http://example.com/a.tar.gz": want an https URL (plain http only to a loopback address)`) {
		t.Errorf("http: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	os.WriteFile(regFile, []byte(`{"version":"1.0.0","agents":[{"id":"x","version":"1.0.0"}]}`), 0o644)
	// Built-in agents do not need the registry.
	r = runIn(t, t.TempDir(), extra, nil, "", "--registry", regFile, "--agent", "demo", "-p", "hi")
	if r.code != 0 {
		t.Errorf("demo with a malformed registry: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	r = runIn(t, t.TempDir(), extra, nil, "", "agents", "--registry", regFile)
	if r.code != exitFailed || !strings.Contains(r.stdout, "claude ") || !strings.Contains(r.stderr, "is malformed") {
		t.Errorf("agents with a malformed registry: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	// The embedded registry names Devin, a binary for this platform, with
	// its profile and the command it will have once installed; listing
	// it downloads nothing.
	r = runIn(t, t.TempDir(), extra, nil, "", "agents")
	if r.code != 0 || !strings.Contains(r.stdout, "devin               3000.4.25   binary        no         Devin") {
		t.Errorf("agents: exit %d; stdout:\n%s", r.code, r.stdout)
	}
	r = runIn(t, t.TempDir(), extra, nil, "", "agents", "--json")
	var list struct {
		Agents []struct {
			Name, From, Version, Distribution string
			Installed                         bool
			Command                           []string
			Profile                           *struct{ Name, ProvenVersion string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || r.code != 0 {
		t.Fatalf("agents --json: exit %d, %v", r.code, err)
	}
	cache := strings.TrimPrefix(extra[len(extra)-1], "XDG_CACHE_HOME=")
	for _, a := range list.Agents {
		if a.Name != "devin" {
			continue
		}
		if a.From != "registry" || a.Version != "3000.4.25" || a.Distribution != "binary" || a.Installed || a.Profile == nil || a.Profile.Name != "devin" ||
			strings.Join(a.Command, " ") != filepath.Join(cache, "acphost", "agents", "devin", "3000.4.25", "bin", "devin")+" acp" {
			t.Errorf("devin: %+v %+v", a, a.Profile)
		}
		if _, err := os.Stat(filepath.Join(cache, "acphost", "agents", "devin")); !os.IsNotExist(err) {
			t.Errorf("listing made devin's directory: %v", err)
		}
		return
	}
	t.Errorf("agents --json lacks devin:\n%s", r.stdout)
}

// TestAttackRegistryStringsReachNoTerminal (issue 36): a registry whose
// names, descriptions, packages, arguments, platforms and archive URLs
// carry ESC, BEL, C1 CSI and bidi controls: nothing acphost agents (and
// install, and --agent) prints for a person holds one; --json keeps the
// strings exact.
func TestAttackRegistryStringsReachNoTerminal(t *testing.T) {
	extra, _, _ := isolated(t)
	extra = append(extra, "XDG_CACHE_HOME="+t.TempDir())
	const evil = "\x1b]0;owned\x07\x1b[2J\u009b31m\u202e\u2066"
	name := "Evil" + evil + "Name"
	doc := map[string]any{"version": "1.0.0", "agents": []any{
		map[string]any{"id": "hostile-npx", "name": name, "version": "1.0.0", "description": "d" + evil,
			"distribution": map[string]any{"npx": map[string]any{"package": "pkg" + evil + "@1", "args": []string{"--x" + evil}}}},
		map[string]any{"id": "hostile-bin", "name": name, "version": "1.0.0", "description": "d" + evil,
			"distribution": map[string]any{"binary": map[string]any{
				registry.Platform(): map[string]any{"archive": "https://127.0.0.1:1/\u202eevil\u009b.tar.gz", "cmd": "./bin/fake", "args": []string{"a" + evil}},
			}}},
		map[string]any{"id": "hostile-none", "name": name, "version": "1.0.0", "description": "d" + evil,
			"distribution": map[string]any{"binary": map[string]any{
				"plan9" + evil: map[string]any{"archive": "https://example.com/a.tar.gz", "cmd": "./a"},
			}}},
	}}
	regFile := filepath.Join(t.TempDir(), "registry.json")
	writeJSON(t, regFile, doc)
	clean := func(what, out string) {
		t.Helper()
		for _, c := range []string{"\x1b", "\x07", "\u009b", "\x9b", "\u202e", "\u2066"} {
			if strings.Contains(out, c) {
				t.Errorf("%s prints %q:\n%q", what, c, out)
			}
		}
	}
	for _, args := range [][]string{
		{"agents", "--registry", regFile},
		{"agents", "install", "hostile-npx", "--registry", regFile},
		{"agents", "install", "hostile-bin", "--registry", regFile},
		{"agents", "install", "hostile-none", "--registry", regFile},
		{"agents", "update", "hostile-npx", "--registry", regFile},
		{"--registry", regFile, "--agent", "hostile-none", "-p", "hi"},
		{"--registry", regFile, "--agent", "hostile-bin", "-p", "hi"},
	} {
		r := runIn(t, t.TempDir(), extra, nil, "", args...)
		clean(strings.Join(args, " "), r.stdout+r.stderr)
		if r.stdout+r.stderr == "" {
			t.Errorf("%v printed nothing", args)
		}
	}
	r := runIn(t, t.TempDir(), extra, nil, "", "agents", "--json", "--registry", regFile)
	var list struct {
		Agents []struct{ Name, Description string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("agents --json: %v\n%s", err, r.stdout)
	}
	exact := false
	for _, a := range list.Agents {
		exact = exact || (a.Name == "hostile-npx" && a.Description == "d"+evil)
	}
	if !exact {
		t.Errorf("agents --json does not keep the registry's strings exact:\n%s", r.stdout)
	}
}

// TestAgentsRemoveInUseWarns (issue 36): agents remove of an agent that a
// running acphost's session uses goes through, and says so on stderr,
// naming that acphost's pid and what the removal does to it.
func TestAgentsRemoveInUseWarns(t *testing.T) {
	extra, _, stateDir := isolated(t)
	cacheDir := t.TempDir()
	extra = append(extra, "XDG_CACHE_HOME="+cacheDir)
	version := filepath.Join(cacheDir, "acphost", "agents", "fake-agent", "1.0.0")
	if err := os.MkdirAll(version, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(version, ".acphost-install.json"), []byte(`{"id":"fake-agent","version":"1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	st := &state.Store{Dir: stateDir}
	if err := st.Put(state.Record{ID: "running-1", Agent: "fake-agent", Cwd: "/somewhere", PID: os.Getpid(), LastUsed: time.Now()}); err != nil {
		t.Fatal(err)
	}
	r := runIn(t, t.TempDir(), extra, nil, "", "agents", "remove", "fake-agent")
	if r.code != 0 || !strings.Contains(r.stdout, "removed fake-agent 1.0.0") {
		t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	want := fmt.Sprintf("acphost agents remove fake-agent: in use by acphost pid %d (session running-1 in /somewhere)", os.Getpid())
	if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "installs it again") {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
	if _, err := os.Stat(version); !os.IsNotExist(err) {
		t.Errorf("not removed: %v", err)
	}
}
