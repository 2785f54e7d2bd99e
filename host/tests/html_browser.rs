//! The `--html` report in a real browser: headless Chromium renders it
//! offline (every network request would fail: the proxy points nowhere),
//! with no console message at all (the page has no script, so any message
//! is an error: a failed load, a parse problem), with its four plots in
//! the DOM, and visibly: a screenshot of the page has far more coloured
//! pixels than the same page with its plots taken out. The target's
//! metadata, nested objects and a long kernel command line included, stays
//! inside the page's width.
//!
//! Skipped, saying so, only where no Chromium is installed (`scripts/test`
//! installs Debian's `chromium`).

mod common;
mod plotkit;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use latprobe_protocol::Outcome;

fn browser() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"].iter().find_map(|name| {
        let out = Command::new("sh").args(["-c", &format!("command -v {name}")]).output().ok()?;
        let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && !p.is_empty()).then(|| PathBuf::from(p))
    })
}

/// Render `page` headless: its console messages, its DOM after parsing,
/// and a full-height screenshot.
struct Rendered {
    console: Vec<String>,
    dom: String,
    png: Vec<u8>,
}

fn render(chrome: &Path, page: &Path, work: &Path) -> Rendered {
    let url = format!("file://{}", page.display());
    let common = |profile: &str| {
        let mut c = Command::new(chrome);
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            // Containers often have a small /dev/shm.
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
            // Offline: any request beyond the file itself fails, and says so
            // on the console.
            "--proxy-server=127.0.0.1:9",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1200,5000",
        ]);
        c.arg(format!("--user-data-dir={}", work.join(profile).display()));
        c
    };
    let shot = work.join(format!("{}.png", page.file_stem().unwrap().to_string_lossy()));
    let o = common("p1")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .expect("run chromium");
    assert!(o.status.success(), "chromium failed: {}", String::from_utf8_lossy(&o.stderr));
    let console = String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    let d = common("p2").arg("--dump-dom").arg(&url).output().expect("run chromium");
    assert!(d.status.success(), "chromium --dump-dom failed: {}", String::from_utf8_lossy(&d.stderr));
    Rendered {
        console,
        dom: String::from_utf8_lossy(&d.stdout).into_owned(),
        png: std::fs::read(&shot).expect("screenshot"),
    }
}

/// Pixels of clearly saturated colour (plot lines and bars, not black,
/// grey or white text).
fn coloured_pixels(png_bytes: &[u8]) -> (u32, u32, usize) {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let channels = info.color_type.samples();
    let n = buf[..info.buffer_size()]
        .chunks(channels)
        .filter(|p| {
            let (r, g, b) = (i32::from(p[0]), i32::from(p[1]), i32::from(p[2]));
            r.max(g).max(b) - r.min(g).min(b) > 80
        })
        .count();
    (info.width, info.height, n)
}

fn mostly_fast(seq: u64) -> Outcome {
    fake_outcome(seq)
}

#[test]
fn the_html_report_renders_offline_with_its_plots_and_no_console_error() {
    let Some(chrome) = browser() else {
        eprintln!(
            "SKIPPED the_html_report_renders_offline_with_its_plots_and_no_console_error: no Chromium \
             (chromium, chromium-browser or google-chrome) on PATH; `apt-get install chromium` (scripts/test does)"
        );
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let probe = FakeProbe::start(dir.path(), FakeOpts { outcomes: mostly_fast, ..FakeOpts::default() });
    let meta = dir.path().join("target.json");
    std::fs::write(&meta, r#"{"hostname":"bench-1","kernel":"6.6.0-rt <&> \"quoted\"","cpus":4}"#).unwrap();
    let page = dir.path().join("report.html");
    let o = probe.run(&[
        "--count",
        "3000",
        "--max",
        "1ms",
        "--percentile",
        "99=100us",
        "--max-lost",
        "0",
        "--target-meta",
        meta.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "the max is censored, so the limit fails: {}", show(&o));
    let html = std::fs::read_to_string(&page).expect("the HTML report");
    // Self-contained: nothing to fetch.
    for attr in ["src=\"http", "href=\"http", "src='http", "href='http", "@import", "url(http"] {
        assert!(!html.contains(attr), "the page fetches something ({attr})");
    }

    let r = render(&chrome, &page, dir.path());
    assert!(r.console.is_empty(), "console messages: {:#?}", r.console);
    for id in ["plot-histogram", "plot-histogram-log", "plot-timeline", "plot-ccdf"] {
        let at = r
            .dom
            .find(&format!("<figure id=\"{id}\""))
            .unwrap_or_else(|| panic!("no figure {id} in the DOM: the plot was not drawn"));
        let fig = &r.dom[at..];
        let end = fig.find("</figure>").expect("the figure closes");
        assert!(fig[..end].contains("<svg"), "{id} holds no SVG");
    }
    // The limits, target metadata (escaped, intact) and notes are there.
    assert!(r.dom.contains("id=\"verdicts\"") && r.dom.contains("FAIL"), "verdicts");
    assert!(r.dom.contains("6.6.0-rt &lt;&amp;&gt; \"quoted\""), "target metadata");
    assert!(r.dom.contains("id=\"notes\""), "notes");

    // Visible: the same page without its plots has far fewer coloured pixels.
    let mut bare = String::new();
    let mut rest = html.as_str();
    while let Some(at) = rest.find("<svg") {
        bare.push_str(&rest[..at]);
        let end = rest[at..].find("</svg>").expect("closed svg") + at + "</svg>".len();
        rest = &rest[end..];
    }
    bare.push_str(rest);
    let bare_page = dir.path().join("bare.html");
    std::fs::write(&bare_page, bare).unwrap();
    let b = render(&chrome, &bare_page, dir.path());
    let (w, h, with) = coloured_pixels(&r.png);
    let (_, _, without) = coloured_pixels(&b.png);
    assert_eq!((w, h), (1200, 5000), "the screenshot's size");
    assert!(
        with > 5_000 && with > 4 * without.max(1),
        "plots not visible: {with} coloured pixels with, {without} without"
    );
}

/// Pixels darker than light grey in the columns from `x0` on.
fn dark_pixels_from(png_bytes: &[u8], x0: u32) -> usize {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let ch = info.color_type.samples();
    let w = info.width as usize;
    buf[..info.buffer_size()]
        .chunks(ch)
        .enumerate()
        .filter(|(i, p)| i % w >= x0 as usize && p[..3].iter().any(|c| *c < 200))
        .count()
}

#[test]
fn nested_target_metadata_and_a_long_kernel_command_line_stay_inside_the_page() {
    let Some(chrome) = browser() else {
        eprintln!(
            "SKIPPED nested_target_metadata_and_a_long_kernel_command_line_stay_inside_the_page: no Chromium \
             on PATH; `apt-get install chromium` (scripts/test does)"
        );
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let mut r = plotkit::report(plotkit::Spec {
        bins: plotkit::bell(),
        max_measured: Some(60_400),
        ..plotkit::Spec::default()
    });
    // As `latprobe-responder metadata` writes it: objects in objects, a
    // CONFIG_ table, a command line of 600 characters.
    let cmdline = (0..40).map(|i| format!("opt{i}=value,{i},more")).collect::<Vec<_>>().join(" ");
    let token = format!("rdinit=/{}", "x".repeat(400));
    r.target = Some(serde_json::json!({
        "hostname": "bench-1",
        "uname": {"sysname": "Linux", "release": "6.6.0-rt15", "version": "#1 SMP PREEMPT_RT"},
        "preemption": {
            "model": "PREEMPT_RT",
            "config": (0..30).map(|i| (format!("CONFIG_OPTION_NUMBER_{i}"), serde_json::json!("y"))).collect::<serde_json::Map<_, _>>(),
        },
        "kernel_cmdline": {"raw": format!("{cmdline} {token}"), "isolcpus": "2,3", "nohz_full": null},
        "cpufreq_governors": [{"cpu": 0, "governor": "performance"}, {"cpu": 1, "governor": null}],
    }));
    let page = dir.path().join("meta.html");
    latprobe::report::html::write(&r, &page).expect("the HTML report");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<th class=\"l\">sysname</th>"), "the nested object is rows");
    let shot = render(&chrome, &page, dir.path());
    assert!(shot.console.is_empty(), "console messages: {:#?}", shot.console);
    // The body is at most 1100 px wide, centred in 1200: nothing is drawn
    // in the right margin unless a value overflowed the page.
    let dark = dark_pixels_from(&shot.png, 1165);
    assert_eq!(dark, 0, "{dark} dark pixels in the right margin: a value overflows the page");
}
