module github.com/acphost/acphost/bench

go 1.26.0

require github.com/acphost/acphost v0.0.0

require github.com/coder/acp-go-sdk v0.13.0

require golang.org/x/sync v0.20.0 // indirect

replace github.com/acphost/acphost => ../
