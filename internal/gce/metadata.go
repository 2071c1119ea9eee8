package gce

// MetadataValueLimit is GCE's limit on one metadata value (256 KiB): the
// kube-env and the startup script of a group are each one value.
const MetadataValueLimit = 256 * 1024

// GuestAttributesKey is the instance metadata key that lets a VM write
// its guest attributes (Compute Engine documentation, "Set and query
// guest attributes": enable-guest-attributes=TRUE).
const GuestAttributesKey = "enable-guest-attributes"
