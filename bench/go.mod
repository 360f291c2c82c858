module github.com/acphost/acphost/bench

go 1.26.0

require github.com/acphost/acphost v0.0.0

require (
	github.com/coder/acp-go-sdk v0.13.0
	github.com/sourcegraph/jsonrpc2 v0.2.3 // indirect
)

replace github.com/acphost/acphost => ../
