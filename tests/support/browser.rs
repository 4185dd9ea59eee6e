//! A real headless Chromium for the page tests (Debian's `chromium`; `scripts/test`
//! installs it when missing): the DOM after the page's script ran, and screenshots. A
//! machine without it fails the tests that need it, with a message; they never skip.

use std::path::Path;
use std::time::Duration;

use tokio::process::Command;

/// The browser's command name.
const CHROMIUM: &str = "chromium";

/// Time the page's script gets (virtual: Chromium runs timers fast and stops when idle).
const BUDGET_MS: &str = "5000";

fn chromium() -> Command {
    let found = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {CHROMIUM}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "the page tests need a headless Chromium: install Debian's package with \
         `apt-get install -y chromium` (scripts/test does when it is missing)"
    );
    let mut cmd = Command::new(CHROMIUM);
    cmd.args([
        "--headless",
        "--disable-gpu",
        "--no-sandbox",
        "--no-first-run",
        "--disable-extensions",
        "--hide-scrollbars",
        &format!("--virtual-time-budget={BUDGET_MS}"),
    ])
    .kill_on_drop(true);
    cmd
}

/// The DOM of `url` once its script has run (`--dump-dom`).
pub async fn dump_dom(url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = tokio::time::timeout(
        Duration::from_secs(25),
        chromium()
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(["--dump-dom", url])
            .output(),
    )
    .await
    .expect("chromium answers within 25 s")
    .expect("run chromium");
    assert!(out.status.success(), "chromium failed on {url}: {out:?}");
    String::from_utf8(out.stdout).expect("the DOM is UTF-8")
}

/// A 1280x900 screenshot of `url` written to `png`.
pub async fn screenshot(url: &str, png: &Path) {
    let profile = tempfile::tempdir().unwrap();
    let out = tokio::time::timeout(
        Duration::from_secs(25),
        chromium()
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(["--window-size=1280,900"])
            .arg(format!("--screenshot={}", png.display()))
            .arg(url)
            .output(),
    )
    .await
    .expect("chromium answers within 25 s")
    .expect("run chromium");
    assert!(out.status.success(), "chromium failed on {url}: {out:?}");
}

/// The text of the element whose attribute `attr` is `value` in a dumped DOM (the first),
/// e.g. `text_of(dom, "data-figure", "done")`.
pub fn text_of(dom: &str, attr: &str, value: &str) -> Option<String> {
    let marker = format!("{attr}=\"{value}\"");
    let at = dom.find(&marker)?;
    let open_end = at + dom[at..].find('>')? + 1;
    let close = open_end + dom[open_end..].find('<')?;
    Some(dom[open_end..close].to_owned())
}
