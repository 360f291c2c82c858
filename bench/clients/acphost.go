package clients

import (
	"context"
	"errors"
	"io"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/bench/flood"
)

type acphostClient struct {
	c     *acphost.ACPClient
	count counter
}

func (h *acphostClient) options(opts Options) acphost.ACPOptions {
	h.count.spin = opts.Spin
	return acphost.ACPOptions{
		Command: opts.Agent,
		Args:    opts.Args,
		OnUpdate: func(u acp.Update) {
			h.count.update()
		},
		OnPermission: func(_ context.Context, req *acp.PermissionRequest) (string, error) {
			for _, o := range req.Options {
				if o.Kind == acp.AllowOnce {
					return o.ID, nil
				}
			}
			return "", errors.New("no allow_once option")
		},
		Limits: acphost.Limits{MaxQueuedUpdates: opts.MaxQueuedUpdates},
	}
}

func startACPHost(ctx context.Context, opts Options) (*acphostClient, error) {
	h := &acphostClient{}
	c, err := acphost.Start(ctx, h.options(opts))
	if err != nil {
		return nil, err
	}
	h.c = c
	return h, nil
}

func connectACPHost(ctx context.Context, r io.Reader, w io.Writer, closer io.Closer, opts Options) (*acphostClient, error) {
	h := &acphostClient{}
	o := h.options(opts)
	o.Command, o.Args = "", nil
	o.Transport = &acphost.StreamTransport{Reader: r, Writer: w, Closer: closer}
	c, err := acphost.Start(ctx, o)
	if err != nil {
		return nil, err
	}
	h.c = c
	return h, nil
}

func (h *acphostClient) Turn(ctx context.Context, prompt string) (Result, error) {
	before := h.count.n.Load()
	resp, err := h.c.GenerateCtx(ctx, acphost.Request{Prompt: prompt})
	res := Result{StopReason: string(resp.StopReason), Text: resp.Text, Updates: h.count.n.Load() - before}
	if m, merr := flood.ParseMeta(resp.Meta); merr == nil {
		res.Meta, res.HasMeta = m, true
	}
	return res, err
}

func (h *acphostClient) Close() error { return h.c.Close() }
