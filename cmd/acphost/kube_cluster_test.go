package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// kubeTestImage is the kube module's test agent image
// (kube/testdata/image.sh): fakeagent as /bin/acphost-testagent.
const kubeTestImage = "localhost/acphost-kube/agent:test"

// needKube skips the test unless a test cluster is asked for
// (ACPHOST_KUBE_TEST=1, or ACPHOST_REQUIRE_KUBE=1, under which a missing
// one fails): a person's KUBECONFIG alone never has pods made in it.
func needKube(t *testing.T) {
	t.Helper()
	required := os.Getenv("ACPHOST_REQUIRE_KUBE") == "1"
	switch {
	case required && os.Getenv("KUBECONFIG") == "":
		t.Fatal("a cluster is required by ACPHOST_REQUIRE_KUBE=1, and KUBECONFIG is unset")
	case !required && (os.Getenv("ACPHOST_KUBE_TEST") != "1" || os.Getenv("KUBECONFIG") == ""):
		t.Skip("SKIPPED, NOT PASSED: needs a test cluster (ACPHOST_KUBE_TEST=1, KUBECONFIG) with kube/testdata/image.sh's image; CI sets ACPHOST_REQUIRE_KUBE=1")
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatal("kubectl is needed to check what the CLI left in the cluster")
	}
}

// acphostPods lists the pods acphost made in the default namespace.
func acphostPods(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("kubectl", "get", "pods", "-l", "app.kubernetes.io/managed-by=acphost",
		"-o", "jsonpath={.items[*].metadata.name}").Output()
	if err != nil {
		t.Fatalf("kubectl get pods: %v", err)
	}
	return strings.Fields(string(out))
}

// TestKubeCLIRunsTheAgentInAPod: acphost --kube-image runs the command
// after -- as the agent in a pod of its own: its turn, a permission
// answered by the policy, its crash with the exit status, the header
// naming the pod, the record keeping the place — and when acphost exits,
// no pod it made is left.
func TestKubeCLIRunsTheAgentInAPod(t *testing.T) {
	needKube(t)
	before := acphostPods(t)
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	kube := []string{"--kube-image", kubeTestImage, "--kube-pull", "never", "--cwd", "/work"}

	r := runIn(t, dir, extra, nil, "", append(kube, "-p", "hi", "--", "/bin/acphost-testagent", "hello")...)
	if r.code != 0 || !strings.Contains(r.stdout, "hello from the pod") {
		t.Fatalf("hello: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, " in pod acphost-") || !strings.Contains(r.stdout, "containment: pod") {
		t.Errorf("the header does not name the pod:\n%s", r.stdout)
	}

	r = runIn(t, dir, extra, nil, "", append(kube, "--permission", "allow", "-p", "go", "--", "/bin/acphost-testagent", "permission")...)
	if r.code != 0 || !strings.Contains(r.stdout, "you picked") {
		t.Errorf("permission: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}

	r = runIn(t, dir, extra, nil, "", append(kube, "-p", "go", "--", "/bin/acphost-testagent", "crash", "7")...)
	if r.code != exitFailed || !strings.Contains(r.stderr, "agent exited with status 7") {
		t.Errorf("crash: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}

	r = runIn(t, dir, extra, nil, "", "sessions", "--json")
	if !strings.Contains(r.stdout, `"kube": {`) || !strings.Contains(r.stdout, `"image": "`+kubeTestImage+`"`) {
		t.Errorf("the records do not keep the place:\n%s", r.stdout)
	}
	for _, p := range acphostPods(t) {
		if !slices.Contains(before, p) {
			t.Errorf("pod %s outlived acphost", p)
		}
	}
}

// TestKubeServeRunsTheAgentInAPod: acphost serve --kube-image serves each
// connection an agent in a pod of its own: the printed command reaches
// it from the pod's directory, its turn answers, and once serve is
// stopped (SIGTERM) no pod it made is left.
func TestKubeServeRunsTheAgentInAPod(t *testing.T) {
	needKube(t)
	needSignals(t)
	before := acphostPods(t)
	extra, _, _ := isolated(t)
	srv := start(t, nil, "serve", "--listen", "127.0.0.1:0", "--kube-image", kubeTestImage, "--kube-pull", "never",
		"--cwd", "/work", "--", "/bin/acphost-testagent", "hello")
	if url, ok := srv.line(); !ok || !strings.HasPrefix(url, "ws://127.0.0.1:") {
		t.Fatalf("serve printed %q; stderr: %s", url, srv.stderr.String())
	}
	connect, _ := srv.line() // acphost --url URL --token-file FILE --cwd /work
	args := strings.Fields(connect)
	if len(args) != 7 || args[0] != "acphost" || args[3] != "--token-file" || args[5] != "--cwd" || args[6] != "/work" {
		t.Fatalf("the connect line: %q", connect)
	}
	args = append(args[1:], "-p", "hi")
	args[3] = strings.Trim(args[3], "'") // shell-quoted
	r := runIn(t, t.TempDir(), extra, nil, "", args...)
	if r.code != 0 || !strings.Contains(r.stdout, "hello from the pod") {
		t.Errorf("hi: exit %d\nstdout:\n%s\nstderr:\n%s\nserve's stderr:\n%s", r.code, r.stdout, r.stderr, srv.stderr.String())
	}
	srv.signal(syscall.SIGTERM)
	if _, code := srv.wait(); code != exitOK {
		t.Errorf("serve: exit %d; stderr:\n%s", code, srv.stderr.String())
	}
	for _, p := range acphostPods(t) {
		if !slices.Contains(before, p) {
			t.Errorf("pod %s outlived acphost serve", p)
		}
	}
}
