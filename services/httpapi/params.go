package httpapi

// Deref is the value of an optional parameter or field of the generated API types (the zero value when absent).
func Deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// Ptr returns a pointer to v (for the generated types' optional fields).
func Ptr[T any](v T) *T { return &v }
