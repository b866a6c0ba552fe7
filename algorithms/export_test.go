package algorithms

// WithFullVirtualExpiry is WithVirtualExpiry always in the full form (never
// the lean one), for the tests that compare the two.
func WithFullVirtualExpiry(src string, withTime bool) (VirtualTimeScript, error) {
	return rewrite(src, withTime, true, false)
}
