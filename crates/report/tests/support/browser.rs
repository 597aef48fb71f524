//! Headless Chromium for the page tests: finds the binary and dumps the
//! DOM a page builds.
#![allow(dead_code)] // each test uses what it needs

use std::path::Path;
use std::process::Command;

pub fn chromium() -> String {
    if let Ok(path) = std::env::var("CHROMIUM") {
        return path;
    }
    for name in [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ] {
        if Command::new(name).arg("--version").output().is_ok() {
            return name.into();
        }
    }
    panic!("no chromium found: run scripts/install-deps (or set CHROMIUM to a Chromium binary)");
}

/// Opens `page` headless with `extra` arguments (a fresh profile under
/// `profile`) and returns what the browser printed.
pub fn run(page: &Path, profile: &Path, extra: &[&str]) -> std::process::Output {
    let output = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The DOM the browser built from `page`.
pub fn dom(page: &Path, profile: &Path) -> String {
    String::from_utf8(run(page, profile, &["--dump-dom"]).stdout).unwrap()
}
