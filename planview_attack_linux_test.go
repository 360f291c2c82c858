package acphost

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/acphost/acphost/internal/confine"
	"github.com/acphost/acphost/internal/fsview"
	"github.com/stretchr/testify/require"
)

// The view's scratch directory lies in the client's private TMPDIR. An
// agent in the view cannot touch it (a mount point in its namespace), but
// one that ran without it — with plan mode off, unconfined, or before the
// switch — can reach that directory under /tmp and leave something there
// for the restart that turns plan mode on: a file, a dangling link, a link
// to /proc or to the project. That start still gets its private view, or
// fails; it never runs on Landlock alone, where the user's sockets (the
// session bus that starts processes outside any confinement) and the
// project's metadata are in reach.
func TestPlanModeAttackCannotForceThePrivateViewOff(t *testing.T) {
	if !confine.Available() {
		t.Skip("Landlock is not available on this kernel")
	}
	root := t.TempDir()
	project := filepath.Join(root, "project")
	require.NoError(t, os.Mkdir(project, 0o755))
	plants := map[string]func(string) error{
		"file":     func(p string) error { return os.WriteFile(p, []byte("x"), 0o600) },
		"dangling": func(p string) error { return os.Symlink("/nonexistent/dir", p) },
		"proc":     func(p string) error { return os.Symlink("/proc", p) },
		"project":  func(p string) error { return os.Symlink(project, p) },
	}
	for name, plant := range plants {
		t.Run(name, func(t *testing.T) {
			tmp := &planTemp{}
			t.Cleanup(tmp.remove)
			dir, err := tmp.get()
			require.NoError(t, err)
			require.NoError(t, plant(filepath.Join(dir, ".view")))
			opts := &ACPOptions{Command: "/bin/sh", Args: []string{"-c", "exit 0"}, Dir: project,
				Debug:   DebugOptions{Logger: slog.New(slog.DiscardHandler)},
				Process: ProcessOptions{Confine: &Confinement{PlanOnly: true}},
			}
			l, err := startProcess(opts, tmp)
			if err != nil {
				require.False(t, errors.Is(err, fsview.ErrUnavailable), "%v", err)
				return
			}
			defer l.stop(time.Second)
			require.True(t, l.planView, "the plant forced the view off: %v", l.noView)
		})
	}
}
