package clients

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acphost/acphost/bench/flood"
)

type sdkClient struct {
	conn    *acp.ClientSideConnection
	session acp.SessionId
	closer  io.Closer
	count   counter
}

func newSDK(ctx context.Context, r io.Reader, w io.Writer, closer io.Closer, opts Options) (*sdkClient, error) {
	s := &sdkClient{closer: closer}
	s.count.spin = opts.Spin
	// The SDK logs to slog.Default unless told otherwise; SetLogger races
	// with its goroutines, so callers silence slog.Default instead.
	s.conn = acp.NewClientSideConnection(sdkHandler{s}, w, r)
	if _, err := s.conn.Initialize(ctx, acp.InitializeRequest{
		ProtocolVersion:    acp.ProtocolVersionNumber,
		ClientCapabilities: acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{}},
		ClientInfo:         &acp.Implementation{Name: "bench-sdk", Version: "1"},
	}); err != nil {
		return nil, err
	}
	wd, _ := os.Getwd()
	sess, err := s.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: wd, McpServers: []acp.McpServer{}})
	if err != nil {
		return nil, err
	}
	s.session = sess.SessionId
	return s, nil
}

func (s *sdkClient) Turn(ctx context.Context, prompt string) (Result, error) {
	before := s.count.n.Load()
	resp, err := s.conn.Prompt(ctx, acp.PromptRequest{SessionId: s.session, Prompt: []acp.ContentBlock{acp.TextBlock(prompt)}})
	res := Result{StopReason: string(resp.StopReason), Updates: s.count.n.Load() - before}
	var re *acp.RequestError
	if ctx.Err() != nil && errors.As(err, &re) && re.Code == -32800 {
		// The SDK reports its own cancellation as -32800, not ctx.Err().
		return res, fmt.Errorf("%w: %v", ctx.Err(), err)
	}
	if err == nil && resp.Meta != nil {
		raw, _ := json.Marshal(resp.Meta)
		if m, merr := flood.ParseMeta(raw); merr == nil {
			res.Meta, res.HasMeta = m, true
		}
	}
	return res, err
}

// Close closes the agent's input and waits for it (or kills it).
func (s *sdkClient) Close() error {
	if s.closer != nil {
		return s.closer.Close()
	}
	return nil
}

// Done is closed when the SDK's connection ends.
func (s *sdkClient) Done() <-chan struct{} { return s.conn.Done() }

type sdkHandler struct{ s *sdkClient }

var errUnsupported = errors.New("not supported")

func (h sdkHandler) SessionUpdate(ctx context.Context, n acp.SessionNotification) error {
	h.s.count.update()
	return nil
}

func (h sdkHandler) RequestPermission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	for _, o := range req.Options {
		if o.Kind == acp.PermissionOptionKindAllowOnce {
			return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{
				Selected: &acp.RequestPermissionOutcomeSelected{OptionId: o.OptionId},
			}}, nil
		}
	}
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
}

func (sdkHandler) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, errUnsupported
}

func (sdkHandler) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, errUnsupported
}

func (sdkHandler) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, errUnsupported
}

func (sdkHandler) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, errUnsupported
}

func (sdkHandler) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, errUnsupported
}

func (sdkHandler) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, errUnsupported
}

func (sdkHandler) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, errUnsupported
}
