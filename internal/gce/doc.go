// Package gce holds sourced Compute Engine facts — machine type shapes and
// NVIDIA accelerator types with their attachment rules — that nodegen uses to
// check and render Managed Instance Group configuration for node groups.
package gce
