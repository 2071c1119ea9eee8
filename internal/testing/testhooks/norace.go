//go:build !race

package testhooks

const race = false
