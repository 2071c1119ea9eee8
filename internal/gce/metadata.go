package gce

// MetadataValueLimit is GCE's limit on one metadata value (256 KiB): the
// kube-env and the startup script of a group are each one value.
const MetadataValueLimit = 256 * 1024
