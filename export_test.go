package acphost

// What the tests of package acphost_test borrow from this package's own
// test helpers: each is the public API seen through a fake agent (these
// names exist only in the test binary).
var (
	ConnectFake       = connectFake
	TryConnectFake    = tryConnectFake
	Raw               = raw
	Received          = received
	Responses         = responses
	PermissionAnswers = permissionAnswers
	ClaudeLike        = claudeLike
	ModesSet          = modesSet
	TurnCtx           = turnCtx
	JSONUnmarshal     = jsonUnmarshal
	MustMarshal       = mustMarshal
	StartFake         = startFake
	RequireNoFile     = requireNoFile
	Eventually        = eventually
)

// PipeAgent is the in-process fake agent ConnectFake serves.
type PipeAgent = pipeAgent

// TestHostEnv makes the test binary a host process (see testHostMain).
const TestHostEnv = testHostEnv
