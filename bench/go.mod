module github.com/acphost/acphost/bench

go 1.26.0

require github.com/acphost/acphost v0.0.0

require github.com/coder/acp-go-sdk v0.13.0

replace github.com/acphost/acphost => ../
