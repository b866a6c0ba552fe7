package publish

import (
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/testenv"
	"github.com/ratelab/ratelab/reports/reportstest"
)

// chromiumDOM renders the page at path in headless Chromium and returns
// the DOM it built and its screenshot.
func chromiumDOM(t *testing.T, path string) (string, image.Image) {
	t.Helper()
	bin := reportstest.Chromium(t)
	dir := t.TempDir()
	args := func(extra ...string) []string {
		return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
			"--user-data-dir=" + filepath.Join(dir, "profile"), "--window-size=1280,1400"}, append(extra, "file://"+path)...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dom, err := exec.CommandContext(ctx, bin, args("--dump-dom")...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	shot := filepath.Join(dir, "page.png")
	if out, err := exec.CommandContext(ctx, bin, args("--screenshot="+shot)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(dom), img
}

var (
	tableRe = regexp.MustCompile(`(?s)<h2>Counter-example</h2>\s*<table>(.*?)</table>`)
	thRe    = regexp.MustCompile(`<th>(.*?)</th>`)
	trRe    = regexp.MustCompile(`(?s)<tr class="[a-z]*">(.*?)</tr>`)
	tdRe    = regexp.MustCompile(`<td[^>]*>(.*?)</td>`)
	// a tick label of 7 digits or more: raw µs on an axis
	rawTick = regexp.MustCompile(`>\s*-?\d{7,}(\.\d+)?\s*<`)
)

// A first-hit counter-example's report.html, in headless Chromium: the
// worst window as found and the shrunk trace side by side, each figure's
// time axis with its unit and no raw µs, and the counter-example's table
// with every request of the trace (the first hit at +0 s among them),
// times from the first request, and no column empty in every row.
func TestVerifyHTMLInChromium(t *testing.T) {
	testenv.SkipUnderRace(t)
	dir := t.TempDir()
	if err := WriteVerifyDir(dir, reportstest.VerifyFirstHit()); err != nil {
		t.Fatal(err)
	}
	dom, img := chromiumDOM(t, filepath.Join(dir, "report.html"))
	for _, fig := range []string{`<figure id="counterexample-found" class="half">`, `<figure id="counterexample" class="half">`} {
		if !strings.Contains(dom, fig) {
			t.Errorf("the rendered DOM lacks %s", fig)
		}
	}
	found, shrunk := strings.Index(dom, `id="counterexample-found"`), strings.Index(dom, `id="counterexample"`)
	if found < 0 || shrunk < found {
		t.Error("the worst window as found does not come first, the shrunk trace beside it")
	}
	for _, name := range []string{"counterexample-found", "counterexample"} {
		i := strings.Index(dom, `<figure id="`+name+`"`)
		svg := dom[i : i+strings.Index(dom[i:], "</figure>")]
		if !strings.Contains(svg, "time from the window's start (µs); the window starts 59.999989s after the first request") {
			t.Errorf("%s: no time axis with its unit, placed from the first request", name)
		}
		if m := rawTick.FindString(svg); m != "" {
			t.Errorf("%s: a raw µs tick label %q", name, m)
		}
	}
	m := tableRe.FindStringSubmatch(dom)
	if m == nil {
		t.Fatal("the rendered DOM has no counter-example table")
	}
	var head []string
	for _, h := range thRe.FindAllStringSubmatch(m[1], -1) {
		head = append(head, h[1])
	}
	if want := "time from the first request,key,cost,client,answer"; strings.Join(head, ",") != want {
		t.Errorf("counter-example columns %v, want %s", head, want)
	}
	rows := trRe.FindAllStringSubmatch(m[1], -1)
	if len(rows) != 12 {
		t.Errorf("%d requests in the counter-example's table, want the trace's 12", len(rows))
	}
	filled := make([]bool, len(head))
	for i, r := range rows {
		cells := tdRe.FindAllStringSubmatch(r[1], -1)
		for c, cell := range cells {
			if c < len(filled) && strings.TrimSpace(cell[1]) != "" {
				filled[c] = true
			}
		}
		if i == 0 && (len(cells) == 0 || cells[0][1] != "+0.000000 s" || cells[len(cells)-1][1] != "accepted") {
			t.Errorf("first row %q: want the first hit, +0.000000 s, accepted (outside the window)", r[1])
		}
	}
	for c, ok := range filled {
		if !ok {
			t.Errorf("column %q is empty in every row", head[c])
		}
	}
	// the page is drawn: the excess over the limit in red in both plots
	near := func(v uint32, want int) bool { d := int(v>>8) - want; return d >= -6 && d <= 6 }
	if red := reportstest.CountPixels(img, img.Bounds(), func(r, g, b uint32) bool { return near(r, 0xE1) && near(g, 0x69) && near(b, 0x69) }); red < 200 {
		t.Errorf("screenshot: %d pixels of the excess's red: the counter-example plots not drawn", red)
	}
}
