package custom

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ratelab/ratelab/algorithms"
	"github.com/ratelab/ratelab/internal/redact"
	"github.com/ratelab/ratelab/limit"
)

// HTTPLimiter treats an HTTP endpoint as a black-box rate limiter: each
// decision is one GET; 2xx means allowed, 429 denied, anything else (and any
// transport error) is an error, never a verdict. It decides on its own
// clock, takes no cost and no key (unless the URL contains "{key}", which is
// replaced by the key). Safe for concurrent use.
type HTTPLimiter struct {
	url    string
	client *http.Client
	limit  limit.Limit
}

var _ algorithms.Limiter = (*HTTPLimiter)(nil)

// NewHTTPLimiter returns the limiter for url; timeout bounds each request
// (zero means 5 s).
func NewHTTPLimiter(rawURL string, l limit.Limit, timeout time.Duration) (*HTTPLimiter, error) {
	if !strings.HasPrefix(rawURL, "http://") && !strings.HasPrefix(rawURL, "https://") {
		return nil, fmt.Errorf("not an http:// or https:// URL: %q", redact.URL(rawURL))
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &HTTPLimiter{url: rawURL, limit: l, client: &http.Client{Timeout: timeout, Transport: tr}}, nil
}

// Name returns the URL, its password hidden (redact.URL).
func (h *HTTPLimiter) Name() string { return redact.URL(h.url) }

// Describe returns the limit being verified.
func (h *HTTPLimiter) Describe() string { return h.limit.String() + " (HTTP, GET)" }

// Capabilities implements algorithms.Limiter: the endpoint uses its own clock
// (resolution unknown), every request costs 1, and it has a state per key
// only when the URL has a {key} placeholder.
func (h *HTTPLimiter) Capabilities() algorithms.Capabilities {
	return algorithms.Capabilities{UsesKeys: strings.Contains(h.url, "{key}")}
}

// Allow sends one GET. The key is used only through a {key} placeholder.
func (h *HTTPLimiter) Allow(ctx context.Context, key string, cost int64, _ algorithms.Clock) (algorithms.Decision, error) {
	if cost != 1 {
		return algorithms.Decision{}, fmt.Errorf("%s: cost %d: an HTTP endpoint takes cost 1 only", h.Name(), cost)
	}
	u := strings.ReplaceAll(h.url, "{key}", url.QueryEscape(key))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		// not err: net/url quotes the URL, password and all
		return algorithms.Decision{}, fmt.Errorf("%s: not a URL (write %% @ : / ? # in a password as %%25 %%40 %%3A %%2F %%3F %%23)", redact.URL(u))
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return algorithms.Decision{}, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close() // drained and read only: its error changes no decision
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return algorithms.Decision{Allowed: true}, nil
	case resp.StatusCode == http.StatusTooManyRequests:
		return algorithms.Decision{Allowed: false}, nil
	}
	return algorithms.Decision{}, fmt.Errorf("%s: HTTP %s (want 2xx or 429)", redact.URL(u), resp.Status)
}
