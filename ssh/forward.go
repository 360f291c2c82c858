package ssh

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/acphost/acphost"
)

var _ acphost.HostForwarder = (*link)(nil)

// ForwardHost implements acphost.HostForwarder with a remote forward on
// the link's connection (tcpip-forward, the server picking a port on its
// 127.0.0.1): a connection the agent makes to it is relayed to addr on
// the host. The forward ends with the connection (Stop); asked again for
// addr it returns the same port.
func (l *link) ForwardHost(addr string) (string, error) {
	l.fmu.Lock()
	defer l.fmu.Unlock()
	if there, ok := l.forwards[addr]; ok {
		return there, nil
	}
	ln, err := l.client.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("ssh: a port forwarded to the host (the server may refuse TCP forwarding): %w", err)
	}
	if l.forwards == nil {
		l.forwards = map[string]string{}
	}
	there := ln.Addr().String()
	l.forwards[addr] = there
	l.wg.Add(1)
	go l.relay(ln, addr)
	return there, nil
}

// relay accepts the agent's connections to a forwarded port until the
// connection closes, each relayed to addr on a goroutine counted in wg.
func (l *link) relay(ln net.Listener, addr string) {
	defer l.wg.Done()
	defer ln.Close()
	for {
		c, err := ln.Accept()
		if err != nil {
			return // the connection closed (Stop)
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			pipe(c, addr)
		}()
	}
}

// pipe joins a forwarded connection to addr until either side ends.
func pipe(remote net.Conn, addr string) {
	defer remote.Close()
	local, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return
	}
	defer local.Close()
	var once sync.Once
	closeBoth := func() { once.Do(func() { remote.Close(); local.Close() }) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(local, remote)
		closeBoth()
	}()
	_, _ = io.Copy(remote, local)
	closeBoth()
	<-done
}
