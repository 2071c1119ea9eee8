//go:build race

package testhooks

// race is set when this binary was built with -race, which Run passes on.
const race = true
