package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/acphost/acphost/cmd/acphost/internal/state"
)

// TestServeKubeFlagsRefuseWhatAPodCannotHave: serve takes the --kube-*
// flags with the refusals acphost makes of them, before it listens.
func TestServeKubeFlagsRefuseWhatAPodCannotHave(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kube-image", "img"}, "give the agent: --agent NAME, or its command after --"},
		{[]string{"--kube-image", "img", "--kube-warm-pool", "p", "--", "a"}, "pick one"},
		{[]string{"--kube-namespace", "ns", "--", "a"}, "go with --kube-image IMAGE or --kube-warm-pool NAME"},
		{[]string{"--kube-warm-pool", "p", "--kube-pull", "never", "--", "a"}, "a warm pool's pods are its template's"},
		{[]string{"--kube-image", "img", "--kube-pull", "sometimes", "--", "a"}, "want never, always or if-not-present"},
		{[]string{"--kube-image", "img", "--cwd", "rel", "--", "a"}, "an absolute directory in the pod"},
		{[]string{"--kube-image", "img", "--agent", "demo"}, "not in the pod's image"},
	} {
		var stdout, stderr bytes.Buffer
		code := serve(tc.args, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) || stdout.Len() > 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, stdout.String(), stderr.String(), exitUsage, tc.want)
		}
	}
}

// TestServeKubeMakesTheTransport: the flags, or a named agent's "kube"
// (a flag wins over it), become the transport each connection dials.
func TestServeKubeMakesTheTransport(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	if err := os.MkdirAll(filepath.Join(dir, "acphost"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := `{"agents": {"podded": {"command": ["agent", "--acp"], "env": {"K": "v"}, "kube": {"warmPool": "pool", "namespace": "agents"}}}}`
	if err := os.WriteFile(filepath.Join(dir, "acphost", "config.json"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	command, env, named, err := serveAgent("podded", nil)
	if err != nil || named == nil {
		t.Fatalf("serveAgent: %v, kube %v", err, named)
	}
	k, err := serveKube(state.KubePlace(*named), "podded", command, env, "")
	if err != nil {
		t.Fatal(err)
	}
	if k.WarmPool != "pool" || k.Namespace != "agents" || k.Image != "" || strings.Join(k.Command, " ") != "agent --acp" ||
		strings.Join(k.Env, " ") != "K=v" || k.Dir != "/" {
		t.Errorf("named agent's transport: %+v", k)
	}

	k, err = serveKube(state.KubePlace{Image: "img:1", Namespace: "ns", Context: "ctx", Pull: "never"}, "", []string{"agent"}, nil, "/work")
	if err != nil {
		t.Fatal(err)
	}
	if k.Image != "img:1" || k.Namespace != "ns" || k.Context != "ctx" || k.PullPolicy != corev1.PullNever ||
		strings.Join(k.Command, " ") != "agent" || k.Dir != "/work" || k.WarmPool != "" {
		t.Errorf("flags' transport: %+v", k)
	}
}

// TestServeKubePrintsThePodsDirectory: the printed command's --cwd is
// the agent's directory in its pod, not this one. No cluster is reached
// until a client connects.
func TestServeKubePrintsThePodsDirectory(t *testing.T) {
	needSignals(t)
	srv := start(t, nil, "serve", "--listen", "127.0.0.1:0", "--token", "s3cret",
		"--kube-image", "img", "--kube-pull", "never", "--cwd", "/work", "--", "agent")
	url, ok := srv.line()
	if !ok || !strings.HasPrefix(url, "ws://127.0.0.1:") {
		t.Fatalf("serve printed %q; stderr: %s", url, srv.stderr.String())
	}
	connect, _ := srv.line()
	if !strings.HasSuffix(connect, " --cwd /work") {
		t.Errorf("the connect line names %q, want the pod's directory /work", connect)
	}
	srv.signal(syscall.SIGTERM)
	if _, code := srv.wait(); code != exitOK {
		t.Errorf("exit %d; stderr: %s", code, srv.stderr.String())
	}
}
