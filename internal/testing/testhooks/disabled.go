//go:build !nodegen_testhooks

package testhooks

// Enabled reports whether this binary was built with Tag.
const Enabled = false
