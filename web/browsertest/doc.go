// Package browsertest drives the web package's page in a real browser
// (headless Chromium, through chromedp). It is a module of its own so that
// chromedp never becomes a dependency of acphost's: its tests are all there
// is to it.
package browsertest
