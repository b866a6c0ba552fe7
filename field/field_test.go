package field

import (
	"errors"
	"fmt"
	"testing"
)

func TestError(t *testing.T) {
	base := errors.New("must be >= 1")
	err := fmt.Errorf("config: %w", Errorf("limit", "%w, got %d", base, 0))
	if got, want := err.Error(), "config: limit: must be >= 1, got 0"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if name, ok := Name(err); !ok || name != "limit" {
		t.Errorf("Name = %q, %v; want limit, true", name, ok)
	}
	if !errors.Is(err, base) {
		t.Errorf("the reason is not in the chain")
	}
	if _, ok := Name(errors.New("plain")); ok {
		t.Errorf("Name of a plain error reported a field")
	}
}
