module github.com/acphost/acphost

go 1.26.0

require (
	github.com/coder/websocket v1.8.15
	github.com/stretchr/testify v1.12.1
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
