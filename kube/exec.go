package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/acphost/acphost"
)

// executor makes the exec stream that runs argv in the pod's container:
// WebSocket (subprotocol v5.channel.k8s.io) first, SPDY when the server
// refuses the upgrade, as kubectl does; or the one protocol asked for.
// Both can half-close stdin and both carry the exit status.
func (h *host) executor(pod, container string, argv []string, protocol string) (remotecommand.Executor, error) {
	u := h.cs.CoreV1().RESTClient().Post().
		Resource("pods").Namespace(h.namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container,
			Command:   argv,
			Stdin:     true,
			Stdout:    true,
			Stderr:    true,
		}, scheme.ParameterCodec).URL()
	switch protocol {
	case "spdy":
		return remotecommand.NewSPDYExecutor(h.cfg, "POST", u)
	case "websocket":
		return remotecommand.NewWebSocketExecutor(h.cfg, "GET", u.String())
	case "":
	default:
		return nil, fmt.Errorf("kube: Transport.Protocol %q is none of websocket and spdy", protocol)
	}
	ws, err := remotecommand.NewWebSocketExecutor(h.cfg, "GET", u.String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(h.cfg, "POST", u)
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// exitOf turns a finished exec stream's error into the link's end: nil
// or an exit code is the process's own end (*acphost.ExitError); anything
// else is the stream's failure (*acphost.LinkError). The runtime reports a
// process a signal ended as 128+N, which is taken for signal N.
func exitOf(err error) error {
	var code utilexec.ExitError
	switch {
	case err == nil:
		return &acphost.ExitError{ExitCode: 0}
	case errors.As(err, &code) && code.Exited():
		n := code.ExitStatus()
		if n > 128 && n <= 128+31 {
			return &acphost.ExitError{ExitCode: -1, Signal: syscall.Signal(n - 128).String(), Err: err}
		}
		return &acphost.ExitError{ExitCode: n, Err: err}
	}
	return &acphost.LinkError{Transport: transportName, Op: "stream", Err: err}
}

// stdinWith is what the agent's exec reads: the environment header, then
// what the client writes.
func stdinWith(header []byte, r io.Reader) io.Reader {
	return io.MultiReader(bytes.NewReader(header), r)
}

// stream runs one exec to its end.
func stream(ctx context.Context, ex remotecommand.Executor, stdin io.Reader, stdout, stderr io.Writer) error {
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
}
