package clientside

// SetHeapLimit sets the memory watchdog's bound to b bytes and returns
// the func that restores it.
func SetHeapLimit(b uint64) func() {
	watch.mu.Lock()
	old := heapLimit
	heapLimit = b
	watch.mu.Unlock()
	return func() {
		watch.mu.Lock()
		heapLimit = old
		watch.mu.Unlock()
	}
}
