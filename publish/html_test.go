package publish

import (
	"bytes"
	"context"
	"flag"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/testenv"
	"github.com/ratelab/ratelab/reports"
	"github.com/ratelab/ratelab/reports/reportstest"
)

var screenshot = flag.String("screenshot", "", "also save report.html's Chromium screenshot here (default: only in the test's temp dir)")

// report.html is one self-contained page: no scripts, no external files,
// every plot inlined as SVG, every algorithm's verdict and row.
func TestWriteHTML(t *testing.T) {
	dir := t.TempDir()
	r := reportstest.Six()
	if err := WriteDir(dir, r); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script", "<link", "<img", "src=", "url(", "@import"} {
		if bytes.Contains(page, []byte(bad)) {
			t.Errorf("report.html contains %q: not self-contained", bad)
		}
	}
	if n := bytes.Count(page, []byte("<svg")); n != 3 {
		t.Errorf("%d inline SVGs, want 3 (trailing-boundary-burst, timeline-boundary-burst, ratio)", n)
	}
	// the window, drawn, comes first
	tr, tl := bytes.Index(page, []byte(`<figure id="trailing-boundary-burst">`)), bytes.Index(page, []byte(`<figure id="timeline-boundary-burst">`))
	if tr < 0 || tl < 0 || tr > tl {
		t.Errorf("figure order: trailing at %d, timeline at %d; want the trailing-window plot first", tr, tl)
	}
	if bytes.Contains(page, []byte("<?xml")) {
		t.Error("an SVG's XML prolog was left inside the HTML")
	}
	for _, alg := range r.Config.Algorithms {
		if !bytes.Contains(page, []byte(`data-algorithm="`+alg+`"`)) {
			t.Errorf("no verdict for %s", alg)
		}
		if !bytes.Contains(page, []byte("<td>"+alg+"</td>")) {
			t.Errorf("no results row for %s", alg)
		}
	}
	for _, want := range []string{"exceeded the limit: 100 accepted within one 10s window", "held: never more than the limit",
		"What happened", "weighs the previous window", "7.0.15 at 127.0.0.1:40123 (exec)"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// a figure that is not SVG is an error, not a broken page
	if err := reports.WriteHTML(&bytes.Buffer{}, r, []reports.Figure{{Name: "x", SVG: []byte("\x89PNG")}}); err == nil {
		t.Error("a PNG passed as SVG: no error")
	}
}

// report.html rendered by headless Chromium (Debian's chromium package;
// `make chromium` installs it): the DOM it built shows every algorithm's
// verdict, both plots and the table, and the screenshot is not blank.
func TestHTMLInChromium(t *testing.T) {
	testenv.SkipUnderRace(t)
	bin := reportstest.Chromium(t)
	dir := t.TempDir()
	r := reportstest.Six()
	if err := WriteDir(dir, r); err != nil {
		t.Fatal(err)
	}
	url := "file://" + filepath.Join(dir, "report.html")
	args := func(extra ...string) []string {
		return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
			"--user-data-dir=" + filepath.Join(dir, "profile"), "--window-size=1280,2200"}, append(extra, url)...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dom, err := exec.CommandContext(ctx, bin, args("--dump-dom")...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	for _, alg := range r.Config.Algorithms {
		if !regexp.MustCompile(`<li class="[a-z]*" data-algorithm="` + alg + `"><b>` + alg + `</b>`).Match(dom) {
			t.Errorf("the rendered DOM has no verdict for %s", alg)
		}
	}
	if n := bytes.Count(dom, []byte("<svg")); n != 3 {
		t.Errorf("the rendered DOM has %d SVGs, want 3", n)
	}
	// the window, drawn, is the first plot
	if i := bytes.Index(dom, []byte(`<figure id="`)); i < 0 || !bytes.HasPrefix(dom[i:], []byte(`<figure id="trailing-boundary-burst"`)) {
		t.Error("the first figure of the rendered page is not trailing-boundary-burst")
	}
	if n := bytes.Count(dom, []byte("<tr class=")); n != len(r.Results) {
		t.Errorf("the rendered DOM has %d result rows, want %d", n, len(r.Results))
	}
	// the window's picture says where the boundaries are, what t counts
	// from, in which unit, and why fixed-window broke
	for _, want := range []string{"anchor", "boundaries (every W)", "time t from the anchor (s); t = 0 is the aligned window boundary",
		"fixed-window: counter reset at the boundary at +0s", "offered (cost, total)", "max in W (cost, one window)"} {
		if !bytes.Contains(dom, []byte(want)) {
			t.Errorf("the rendered DOM lacks %q", want)
		}
	}
	if n := bytes.Count(dom, []byte("stroke-dasharray:2,2")); n < 6 {
		t.Errorf("%d dotted window boundaries in the rendered plots, want at least one per panel (6)", n)
	}

	shot := filepath.Join(dir, "report.png")
	if out, err := exec.CommandContext(ctx, bin, args("--screenshot="+shot)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if *screenshot != "" {
		data, _ := os.ReadFile(shot)
		if err := os.WriteFile(*screenshot, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// the page is drawn: dark text in the top band, the verdicts' orange
	// (exceeded) and green (held) borders further down
	if dark := reportstest.CountPixels(img, image.Rect(0, 0, 1280, 120), func(r, g, b uint32) bool { return r < 0x4000 && g < 0x4000 && b < 0x4000 }); dark < 200 {
		t.Errorf("screenshot: %d dark pixels in the title band: blank page?", dark)
	}
	orange := reportstest.CountPixels(img, img.Bounds(), func(r, g, b uint32) bool { return r>>8 == 0xd5 && g>>8 == 0x5e && b>>8 == 0x00 })
	green := reportstest.CountPixels(img, img.Bounds(), func(r, g, b uint32) bool { return r>>8 == 0x00 && g>>8 == 0x9e && b>>8 == 0x73 })
	if orange < 100 || green < 100 {
		t.Errorf("screenshot: %d orange and %d green pixels: verdicts not drawn", orange, green)
	}
	// fixed-window's excess over the limit, filled red (overColor over white)
	near := func(v uint32, want int) bool { d := int(v>>8) - want; return d >= -6 && d <= 6 }
	red := reportstest.CountPixels(img, img.Bounds(), func(r, g, b uint32) bool { return near(r, 0xE1) && near(g, 0x69) && near(b, 0x69) })
	if red < 300 {
		t.Errorf("screenshot: %d pixels of the excess's red: the trailing-window plot's excess not drawn", red)
	}
}

// capacity and verify results get the same kind of page.
func TestWriteCapacityAndVerifyHTML(t *testing.T) {
	var b bytes.Buffer
	c := reportstest.Capacity()
	if err := reports.WriteCapacityHTML(&b, c, nil); err != nil {
		t.Fatal(err)
	}
	for _, row := range c.Results {
		if !bytes.Contains(b.Bytes(), []byte("<td>"+row.Algorithm+"</td>")) {
			t.Errorf("capacity report.html has no row for %s", row.Algorithm)
		}
	}
	if !bytes.Contains(b.Bytes(), []byte("Memory per key")) {
		t.Error("capacity report.html has no memory table")
	}
	// the directory inlines the memory plot in report.html
	dir := t.TempDir()
	if err := WriteCapacityDir(dir, c); err != nil {
		t.Fatal(err)
	}
	if page, err := os.ReadFile(filepath.Join(dir, "report.html")); err != nil || bytes.Count(page, []byte("<svg")) != 1 {
		t.Errorf("capacity report.html: %v, want one inline SVG", err)
	}
	for _, violated := range []bool{false, true} {
		b.Reset()
		v := reportstest.Verify(violated)
		if err := reports.WriteVerifyHTML(&b, v); err != nil {
			t.Fatal(err)
		}
		want := `class="held" data-algorithm="` + v.Target + `"`
		if violated {
			want = `class="over" data-algorithm="` + v.Target + `"`
		}
		if !bytes.Contains(b.Bytes(), []byte(want)) || !bytes.Contains(b.Bytes(), []byte("Families")) {
			t.Errorf("verify report.html (violated=%v) lacks %s or the families table", violated, want)
		}
		if violated && !bytes.Contains(b.Bytes(), []byte("Counter-example")) {
			t.Error("no counter-example table")
		}
	}
}
