package registry

import (
	"context"
	"fmt"
	"slices"

	"github.com/acphost/acphost"
)

// Command is how to start an agent: the program, its arguments, and the
// environment to add ("KEY=value", sorted).
type Command struct {
	Kind string // KindBinary, KindNPX or KindUVX
	Path string
	Args []string
	Env  []string
	// Installed is the cache's install of a binary agent.
	Installed *Installed
}

// Command is how to start agent a on the cache's platform. A binary one
// not yet installed is installed when install is true (downloaded says
// so), else the error matches ErrNotInstalled.
func (c *Cache) Command(ctx context.Context, a Agent, install bool) (cmd Command, downloaded bool, err error) {
	platform := c.platform()
	switch a.Kind(platform) {
	case KindNPX:
		return packageCommand(KindNPX, *a.Distribution.NPX), false, nil
	case KindUVX:
		return packageCommand(KindUVX, *a.Distribution.UVX), false, nil
	case KindBinary:
	default:
		return Command{}, false, &PlatformError{ID: a.ID, Platform: platform, Offered: a.Platforms()}
	}
	in, err := c.Lookup(a.ID, a.Version)
	if err != nil && install {
		in, downloaded, err = c.Install(ctx, a)
	}
	if err != nil {
		return Command{}, false, err
	}
	cmd = InstalledCommand(in)
	return cmd, downloaded, nil
}

// InstalledCommand is the command of an install.
func InstalledCommand(in Installed) Command {
	return Command{Kind: KindBinary, Path: in.Path(), Args: slices.Clone(in.Args), Env: envList(in.Env), Installed: &in}
}

// packageCommand is npx -y PKG ARGS… (npx -y --package PKG CMD ARGS… with
// a cmd), or uvx PKG ARGS… (uvx --from PKG CMD ARGS…).
func packageCommand(kind string, p Package) Command {
	var args []string
	switch {
	case kind == KindNPX && p.Cmd == "":
		args = []string{"-y", p.Package}
	case kind == KindNPX:
		args = []string{"-y", "--package", p.Package, p.Cmd}
	case p.Cmd == "":
		args = []string{p.Package}
	default:
		args = []string{"--from", p.Package, p.Cmd}
	}
	return Command{Kind: kind, Path: kind, Args: append(args, p.Args...), Env: envList(p.Env)}
}

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// Options are a's Command as the options that start it, installing a
// binary agent on first use.
func (c *Cache) Options(ctx context.Context, a Agent) (acphost.ACPOptions, error) {
	cmd, _, err := c.Command(ctx, a, true)
	if err != nil {
		return acphost.ACPOptions{}, err
	}
	return acphost.ACPOptions{Command: cmd.Path, Args: cmd.Args, Process: acphost.ProcessOptions{Env: cmd.Env}}, nil
}

// Resolve finds agent id in the registry src names and returns the options
// that start it, installing a binary agent into cache on first use (a nil
// cache: one with the defaults). Set the options' callbacks and Dir, then
// acphost.Start them.
func Resolve(ctx context.Context, id string, src Source, cache *Cache) (acphost.ACPOptions, error) {
	r, err := Load(ctx, src)
	if err != nil {
		return acphost.ACPOptions{}, err
	}
	a, ok := r.Agent(id)
	if !ok {
		return acphost.ACPOptions{}, fmt.Errorf("%w: %q in %s", ErrUnknownAgent, id, r.Origin)
	}
	if cache == nil {
		cache = &Cache{Client: src.Client, Dir: src.CacheDir}
	}
	return cache.Options(ctx, a)
}
