package kube

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/internal/proc"
)

// link is one agent exec'd into a pod, with its watchdog on a second
// exec. It is made as soon as the pod (or claim) exists, so that Close
// finds it while the dial still waits; the streams are set once the pod is
// Ready.
type link struct {
	h         *host
	pod       string // "" until known (a claim not yet bound)
	claim     string // the SandboxClaim, "" for a pod of our own
	container string

	stdinW  *io.PipeWriter
	stdoutR *io.PipeReader
	stderrR *io.PipeReader
	cancel  context.CancelFunc // ends both streams
	done    chan struct{}      // the agent's stream ended; err set
	err     error

	wdStdin *io.PipeWriter
	wdDone  chan struct{}
	wdTail  proc.Tail // the watchdog's stderr

	contained acphost.Containment // set once by the dial, before the link is returned

	stopOnce sync.Once
	// mu guards the fields above that the dial sets after the link is
	// tracked (pod for a claim, the streams), against a Close's Stop
	// running meanwhile; stopping tells the dial to start no stream.
	mu       sync.Mutex
	stopping bool
}

// streams is what stop needs of the link, as the dial left it.
type streams struct {
	pod, claim       string
	stdinW, wdStdin  *io.PipeWriter
	stdoutR, stderrR *io.PipeReader
	cancel           context.CancelFunc
	done, wdDone     chan struct{}
}

var _ acphost.ContainedLink = (*link)(nil)

// Containment is the pod as the dial found it: where it runs and what its
// security settings in force give (see Describe).
func (l *link) Containment() acphost.Containment { return l.contained }

// placed records where the dial put the agent, on the link and as the
// transport's latest.
func (l *link) placed(t *Transport, where string, pod *corev1.Pod) {
	l.contained = acphost.Containment{Mode: acphost.ContainPod, Where: where, Facts: facts(pod, l.container)}
	t.placed(l.contained, pod.Name)
}

func (l *link) Read(b []byte) (int, error)  { return l.stdoutR.Read(b) }
func (l *link) Write(b []byte) (int, error) { return l.stdinW.Write(b) }
func (l *link) Stderr() io.Reader           { return l.stderrR }
func (l *link) Done() <-chan struct{}       { return l.done }

// Err is the agent's exit (an *acphost.ExitError: the exec's exit status)
// or the stream's failure (an *acphost.LinkError matching
// acphost.ErrLinkLost).
func (l *link) Err() error { return l.err }

// Promises: the pod is the agent's whole tree (GroupKill: Stop deletes it,
// or for a claim the watchdog ends every process carrying the agent's
// mark before the claim goes); its files are the pod's (no HostFiles),
// and its loopback is the pod's, so host tools are refused.
func (l *link) Promises() acphost.Promises {
	return acphost.Promises{Transport: transportName, Stderr: true, ExitStatus: true, GroupKill: true, Redial: true}
}

// Stop closes the agent's stdin (a Write blocked on an agent that stopped
// reading returns at once) and waits up to grace for it to exit; then a
// pod of our own is deleted with grace as its grace period (the keeper
// sends SIGTERM to every process in it, SIGKILL after its grace), or for a
// claim the watchdog's stdin is closed (SIGTERM, then SIGKILL, to every
// process carrying the agent's mark) and the claim deleted. It returns
// once the pod is gone, bounded by grace and a minute.
func (l *link) Stop(grace time.Duration) {
	l.stopOnce.Do(func() { l.stop(grace) })
}

func (l *link) stop(grace time.Duration) {
	l.mu.Lock()
	l.stopping = true
	st := streams{pod: l.pod, claim: l.claim, stdinW: l.stdinW, wdStdin: l.wdStdin, stdoutR: l.stdoutR, stderrR: l.stderrR,
		cancel: l.cancel, done: l.done, wdDone: l.wdDone}
	l.mu.Unlock()
	if st.stdinW != nil {
		st.stdinW.Close()
		timer := time.NewTimer(grace)
		select {
		case <-st.done:
		case <-timer.C:
		}
		timer.Stop()
	}
	if st.claim != "" && st.wdStdin != nil {
		st.wdStdin.Close()
		timer := time.NewTimer(watchdogWait(grace))
		select {
		case <-st.wdDone:
		case <-timer.C:
		}
		timer.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), grace+time.Minute)
	defer cancel()
	l.h.release(ctx, st.pod, st.claim, grace)
	if st.cancel != nil {
		// The dial closes done itself when it started no agent stream.
		st.cancel()
		<-st.done
		<-st.wdDone
	}
	if st.stdoutR != nil {
		st.stdoutR.CloseWithError(errStopped)
		st.stderrR.CloseWithError(errStopped)
	}
	l.h.forget(l)
}

var errStopped = errors.New("kube: the link was stopped")

// watchdogWait bounds a claim's Stop's wait for the watchdog's rounds.
func watchdogWait(grace time.Duration) time.Duration {
	return 2*keeperGrace + max(grace, time.Second)
}
