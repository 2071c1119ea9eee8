package explain

// Binary byte units.
const (
	kib = 1024
	mib = 1024 * kib
	gib = 1024 * mib
)
