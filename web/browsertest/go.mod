module github.com/acphost/acphost/web/browsertest

go 1.26.0

require (
	github.com/acphost/acphost v0.0.0
	github.com/chromedp/chromedp v0.23.0
)

require (
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	golang.org/x/sync v0.20.0 // indirect
)

replace github.com/acphost/acphost => ../..
