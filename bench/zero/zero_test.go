package zero_test

import (
	"context"
	"io"
	"testing"

	"github.com/acphost/acphost/bench/clients"
	"github.com/acphost/acphost/bench/zero"
)

// TestZeroAgent drives the zero agent with acphost and the floor: the
// turns of bench/cmd/turncost give the updates and text they should, and
// a bad prompt is an error, not a hang.
func TestZeroAgent(t *testing.T) {
	for _, name := range []string{clients.ACPHost, clients.Limit} {
		t.Run(name, func(t *testing.T) {
			c2aR, c2aW := io.Pipe()
			a2cR, a2cW := io.Pipe()
			served := make(chan error, 1)
			go func() {
				served <- zero.Serve(c2aR, a2cW)
				a2cW.Close()
			}()
			closer := closerFunc(func() error {
				c2aW.Close()
				err := <-served
				a2cR.Close()
				return err
			})
			c, err := clients.Connect(context.Background(), name, a2cR, c2aW, closer, clients.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				prompt  string
				updates int64
			}{{"n=0", 0}, {"n=1 perm=1", 2}, {"n=1000", 1000}, {"n=0", 0}} {
				for range 3 {
					res, err := c.Turn(context.Background(), tc.prompt)
					if err != nil || res.StopReason != "end_turn" || res.Updates != tc.updates {
						t.Fatalf("%s: %+v, %v; want %d updates", tc.prompt, res, err, tc.updates)
					}
					if len(res.Text) != int(tc.updates-boolInt(tc.prompt == "n=1 perm=1"))*64 {
						t.Fatalf("%s: %d bytes of text", tc.prompt, len(res.Text))
					}
				}
			}
			if _, err := c.Turn(context.Background(), "bogus=1"); err == nil {
				t.Fatal("a bad prompt was not an error")
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }
