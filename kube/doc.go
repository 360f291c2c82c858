// Package kube runs agents on Kubernetes as an acphost.Transport: each
// Dial runs one agent in a pod of its own, or in a pod claimed from an
// agent-sandbox SandboxWarmPool, and reaches it over the exec API in
// process (client-go's WebSocket v5 stream, SPDY when the server refuses
// it, as kubectl does). It is a module of its own so that a program
// importing only github.com/acphost/acphost links nothing of client-go.
package kube
