// Package gce holds sourced Compute Engine facts — machine type shapes and
// NVIDIA accelerator types with their attachment rules — that nodegen uses to
// check and render Managed Instance Group configuration for node groups,
// and the facts of Google Cloud that more than one package reads: the
// Terraform resource types nodegen writes, the rules of GCE labels and
// metadata, the Compute permissions of the autoscaler's node, the MIGs'
// lifecycle actions and the image a node image is built from.
package gce
