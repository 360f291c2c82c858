package kube

import (
	"bytes"
	"context"
	"errors"
	"io"
	"syscall"

	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/acphost/acphost"
)

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
