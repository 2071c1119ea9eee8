package drift

// SetListPageSize sets ListNodes' page size and returns a func restoring it.
func SetListPageSize(n int64) func() {
	old := listPageSize
	listPageSize = n
	return func() { listPageSize = old }
}
