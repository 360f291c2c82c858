module github.com/acphost/acphost/cmd/acphost

go 1.26.0

require (
	github.com/acphost/acphost v0.0.0
	github.com/stretchr/testify v1.12.1
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
)

require (
	github.com/coder/websocket v1.8.15 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
)

replace github.com/acphost/acphost => ../..
