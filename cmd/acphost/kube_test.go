package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/acphost/acphost/cmd/acphost/internal/state"
)

// TestKubeFlagsRefuseWhatAPodCannotHave: an agent in a pod sees none of
// this machine's files and is not this executable; the flags say which
// way to reach it, once.
func TestKubeFlagsRefuseWhatAPodCannotHave(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kube-image", "img"}, "give the agent's command in the pod after --"},
		{[]string{"--kube-image", "img", "--fs", "--", "a"}, "--fs serves this machine's files"},
		{[]string{"--kube-image", "img", "--writable", "/tmp", "--", "a"}, "confined by its pod"},
		{[]string{"--kube-image", "img", "--kube-warm-pool", "p", "--", "a"}, "pick one"},
		{[]string{"--kube-namespace", "ns", "--", "a"}, "go with --kube-image IMAGE or --kube-warm-pool NAME"},
		{[]string{"--kube-warm-pool", "p", "--kube-pull", "never", "--", "a"}, "a warm pool's pods are its template's"},
		{[]string{"--kube-image", "img", "--kube-pull", "sometimes", "--", "a"}, "want never, always or if-not-present"},
		{[]string{"--kube-image", "img", "--ssh", "h", "--", "a"}, "two different ways"},
		{[]string{"--kube-image", "img", "--cwd", "rel", "--", "a"}, "an absolute directory in the pod"},
	} {
		_, err := parseArgs(tc.args, io.Discard, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestKubeFlagsMakeTheTransport: the flags become the transport's fields,
// --cwd the agent's directory in the pod, and the record keeps the place
// (never a credential) so --resume runs the agent there again.
func TestKubeFlagsMakeTheTransport(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	cfg, err := parseArgs([]string{"--kube-image", "img:1", "--kube-namespace", "ns", "--kube-context", "ctx",
		"--kube-pull", "never", "--cwd", "/work", "-p", "hi", "--", "agent", "--acp"}, io.Discard, false)
	if err != nil {
		t.Fatal(err)
	}
	k := kubeTransport(cfg)
	if k.Image != "img:1" || k.Namespace != "ns" || k.Context != "ctx" || k.PullPolicy != corev1.PullNever ||
		strings.Join(k.Command, " ") != "agent --acp" || k.Dir != "/work" || k.WarmPool != "" {
		t.Errorf("transport: %+v", k)
	}
	r := state.Record{ID: "s", Command: cfg.agent, Kube: cfg.remote.kube}
	b, _ := json.Marshal(r)
	if !strings.Contains(string(b), `"kube":{"image":"img:1","namespace":"ns","context":"ctx","pull":"never"}`) {
		t.Errorf("record: %s", b)
	}
	if got := r.AgentLabel(); got != "agent in kube pod of img:1 in ns on ctx" {
		t.Errorf("label: %q", got)
	}
}

// TestKubeFromTheConfigFile: a named agent's "kube" runs it in a pod; a
// flag wins over it.
func TestKubeFromTheConfigFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	if err := os.MkdirAll(filepath.Join(dir, "acphost"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := `{"agents": {"podded": {"command": ["agent", "--acp"], "kube": {"warmPool": "pool", "namespace": "agents"}}}}`
	if err := os.WriteFile(filepath.Join(dir, "acphost", "config.json"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseArgs([]string{"--agent", "podded", "-p", "hi"}, io.Discard, false)
	if err != nil {
		t.Fatal(err)
	}
	if k := kubeTransport(cfg); k.WarmPool != "pool" || k.Namespace != "agents" || strings.Join(k.Command, " ") != "agent --acp" {
		t.Errorf("transport: %+v", k)
	}
}
