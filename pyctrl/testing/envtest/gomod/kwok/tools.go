//go:build tools

// Package tools records the kwok main package build.sh compiles, so that `go mod tidy`
// keeps every module it needs in go.sum.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
