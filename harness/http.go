package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ratelab/ratelab/algorithms"
)

// HTTPLimiter treats an HTTP endpoint as a black-box rate limiter: each
// decision is one GET; 2xx means allowed, 429 denied, anything else (and any
// transport error) is an error, never a verdict. It decides on its own
// clock, takes no cost and no key (unless the URL contains "{key}", which is
// replaced by the key). Safe for concurrent use.
type HTTPLimiter struct {
	url    string
	client *http.Client
	limit  algorithms.Limit
}

var (
	_ algorithms.Limiter = (*HTTPLimiter)(nil)
	_ Capable            = (*HTTPLimiter)(nil)
	_ KeyAware           = (*HTTPLimiter)(nil)
)

// NewHTTPLimiter returns the limiter for url; timeout bounds each request
// (zero means 5 s).
func NewHTTPLimiter(rawURL string, l algorithms.Limit, timeout time.Duration) (*HTTPLimiter, error) {
	if !strings.HasPrefix(rawURL, "http://") && !strings.HasPrefix(rawURL, "https://") {
		return nil, fmt.Errorf("not an http:// or https:// URL: %q", rawURL)
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &HTTPLimiter{url: rawURL, limit: l, client: &http.Client{Timeout: timeout, Transport: tr}}, nil
}

// Name returns the URL.
func (h *HTTPLimiter) Name() string { return h.url }

// Describe returns the limit being verified.
func (h *HTTPLimiter) Describe() string { return h.limit.String() + " (HTTP, GET)" }

// InjectsTime is false: the endpoint uses its own clock.
func (h *HTTPLimiter) InjectsTime() bool { return false }

// TakesCost is false: every request costs 1.
func (h *HTTPLimiter) TakesCost() bool { return false }

// Resolution is unknown (zero).
func (h *HTTPLimiter) Resolution() time.Duration { return 0 }

// UsesKeys reports whether the URL has a {key} placeholder.
func (h *HTTPLimiter) UsesKeys() bool { return strings.Contains(h.url, "{key}") }

// Allow sends one GET. The key is used only through a {key} placeholder.
func (h *HTTPLimiter) Allow(ctx context.Context, key string, cost int64, _ algorithms.Clock) (algorithms.Decision, error) {
	if cost != 1 {
		return algorithms.Decision{}, fmt.Errorf("%s: cost %d: an HTTP endpoint takes cost 1 only", h.url, cost)
	}
	u := strings.ReplaceAll(h.url, "{key}", url.QueryEscape(key))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return algorithms.Decision{}, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return algorithms.Decision{}, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return algorithms.Decision{Allowed: true}, nil
	case resp.StatusCode == http.StatusTooManyRequests:
		return algorithms.Decision{Allowed: false}, nil
	}
	return algorithms.Decision{}, fmt.Errorf("%s: HTTP %s (want 2xx or 429)", u, resp.Status)
}
