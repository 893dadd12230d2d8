//! `demo view` in a real browser: Debian's Chromium, headless, loads the
//! page from disk with no network, runs its script in virtual time and
//! dumps the DOM; the `data-snapshots` and `data-events` it set on `<body>`
//! must equal what `demo info` and `demo events` report, and a screenshot
//! must come out. Skipped when Chromium is missing, unless
//! `NETQ3_REQUIRE_CHROMIUM` is set (CI sets it and installs Chromium).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{demo, json, json_lines, path_str, q3, stderr, stdout, temp};

/// The variable that turns a missing browser into a failure.
const REQUIRE: &str = "NETQ3_REQUIRE_CHROMIUM";

fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

fn browser_or_skip(test: &str) -> Option<PathBuf> {
    match chromium() {
        Some(path) => Some(path),
        None if std::env::var_os(REQUIRE).is_some() => {
            panic!(
                "{test}: {REQUIRE} is set but Chromium is not installed (apt-get install chromium)"
            )
        }
        None => {
            eprintln!("skipping {test}: Chromium is not installed (set {REQUIRE} to fail instead)");
            None
        }
    }
}

/// Runs headless Chromium on `page` with `extra` arguments; returns stdout.
fn headless(browser: &Path, page: &Path, extra: &[&str]) -> String {
    let profile = temp(&format!(
        "chromium-profile-{}",
        page.file_name().unwrap().to_string_lossy()
    ));
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let output = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
            "--virtual-time-budget=10000",
            &format!("--user-data-dir={}", profile.display()),
        ])
        .args(extra)
        .arg(url)
        .output()
        .expect("chromium runs");
    assert!(
        output.status.success(),
        "chromium failed: {}",
        stderr(&output)
    );
    stdout(&output)
}

/// The value of `attribute` on the dumped `<body>` tag.
fn body_attribute(dom: &str, attribute: &str) -> Option<u64> {
    let body = &dom[dom.find("<body")?..];
    let body = &body[..body.find('>')?];
    let start = body.find(&format!("{attribute}=\""))? + attribute.len() + 2;
    body[start..].split('"').next()?.parse().ok()
}

fn view(file: &str, page: &Path, extra: &[&str]) -> String {
    let mut args = vec!["view", file, "-o", path_str(page)];
    args.extend_from_slice(extra);
    let output = demo(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let html = std::fs::read_to_string(page).unwrap();
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "the page fetches nothing"
    );
    stdout(&output)
}

#[test]
fn the_page_holds_every_snapshot_and_event_of_a_quake3_and_a_native_demo() {
    let Some(browser) =
        browser_or_skip("the_page_holds_every_snapshot_and_event_of_a_quake3_and_a_native_demo")
    else {
        return;
    };
    if !q3::corpus::available_or_skip("the_page_holds_every_snapshot_and_event") {
        return;
    }
    let plasma = q3("one_frag_only_with_plasma.dm_68");
    let native = temp("plasma.native");
    let convert = demo(&["convert", &plasma, path_str(&native)]);
    assert_eq!(convert.status.code(), Some(0), "{}", stderr(&convert));
    for (name, file) in [("q3", plasma.as_str()), ("native", path_str(&native))] {
        let page = temp(&format!("plasma-{name}.html"));
        view(file, &page, &[]);
        let dom = headless(&browser, &page, &["--dump-dom"]);
        let info = json(&demo(&["info", "--json", file]));
        let events = json_lines(&demo(&["events", "--json", file]));
        assert_eq!(
            body_attribute(&dom, "data-snapshots"),
            info["snapshots"].as_u64(),
            "{name}: {}",
            &dom[..dom.len().min(400)]
        );
        assert_eq!(
            body_attribute(&dom, "data-events"),
            Some(events.len() as u64),
            "{name}"
        );
        assert_eq!(info["snapshots"], 634);
    }

    // A screenshot of the duel's page, well into the match.
    let duel = q3("dm_68_osp_duel_2.dm_68");
    let page = temp("duel.html");
    view(&duel, &page, &[]);
    let shot = temp("duel.png");
    headless(
        &browser,
        &page,
        &[
            "--window-size=1280,860",
            &format!("--screenshot={}", shot.display()),
        ],
    );
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(
        png.len() > 20_000,
        "a {} byte screenshot is blank",
        png.len()
    );
}

#[test]
fn long_demos_are_thinned_never_refused() {
    let Some(browser) = browser_or_skip("long_demos_are_thinned_never_refused") else {
        return;
    };
    if !q3::corpus::available_or_skip("long_demos_are_thinned_never_refused") {
        return;
    }
    let duel = q3("dm_68_osp_duel_2.dm_68");
    let page = temp("duel-thinned.html");
    let said = view(&duel, &page, &["--max-snapshots", "1000"]);
    // 17,757 snapshots, at most 1000 kept: every 32nd, 555 of them.
    assert!(said.contains("555 of 17757 snapshots (1 in 32)"), "{said}");
    let dom = headless(&browser, &page, &["--dump-dom"]);
    assert_eq!(body_attribute(&dom, "data-snapshots"), Some(555));
    assert_eq!(body_attribute(&dom, "data-events"), Some(88));
}
