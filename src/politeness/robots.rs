//! robots.txt as RFC 9309 defines it, read the way Google's open-source parser reads it.
//!
//! Google's reading is the de facto standard site owners test against, so where the RFC
//! leaves room (typos in keys, a missing colon, over-long lines, `index.html`) trawl does
//! what Google does. `tests/robots_cases.rs` runs every case of Google's own test suite.
//!
//! Parsing happens once per host; [`Robots::is_allowed`] runs once per URL fetched and does
//! not allocate.

use std::time::Duration;

use url::{Position, Url};

/// How much of a robots.txt body is read (RFC 9309 2.5 asks for at least 500 KiB).
pub const MAX_BYTES: usize = 500 * 1024;

/// Longest line kept, in bytes; the rest of a longer line is dropped. Google keeps eight
/// times the longest URL it supports (2083 bytes), less one for C's terminating NUL.
const MAX_LINE_BYTES: usize = 2083 * 8 - 1;

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Parsed rules of one robots.txt.
///
/// [`Default`] is the same as [`Robots::allow_all`]: no rules, so everything is allowed.
#[derive(Debug, Clone, Default)]
pub struct Robots {
    groups: Vec<Group>,
    sitemaps: Vec<String>,
}

/// One group: a run of user-agent lines and the lines that follow until the next run.
#[derive(Debug, Clone, Default)]
struct Group {
    /// Product tokens, lowercased at parse time so lookups need no allocation.
    agents: Vec<String>,
    /// Whether `User-agent: *` was among the group's user-agent lines.
    global: bool,
    rules: Vec<Rule>,
    crawl_delay: Option<Duration>,
}

impl Group {
    fn names(&self, user_agent: &str) -> bool {
        // An empty token would otherwise match the `User-agent: 123` groups whose token
        // extraction came out empty.
        !user_agent.is_empty()
            && self
                .agents
                .iter()
                .any(|agent| agent.eq_ignore_ascii_case(user_agent))
    }
}

#[derive(Debug, Clone)]
struct Rule {
    allow: bool,
    /// Normalised: ASCII only, non-ASCII bytes percent-encoded, `%xx` escapes uppercased.
    pattern: String,
}

impl Robots {
    /// Parse a robots.txt body.
    ///
    /// Only the first [`MAX_BYTES`] are read; when the body is longer, the line cut by that
    /// limit is dropped too, since half a rule can mean something the site never wrote.
    /// Lines may end in `\n`, `\r\n` or `\r`; a UTF-8 byte order mark is skipped; bytes
    /// that are not UTF-8 are tolerated (patterns keep them percent-encoded, sitemap URLs
    /// get replacement characters). Nothing in the body can make this fail or panic.
    pub fn parse(body: &[u8]) -> Robots {
        let body = within_cap(body);
        let body = body.strip_prefix(UTF8_BOM).unwrap_or(body);
        let mut parser = Parser::default();
        // `\r\n` yields an extra empty line here; empty lines change nothing, so that is fine.
        for line in body.split(|&b| b == b'\n' || b == b'\r') {
            parser.line(&line[..line.len().min(MAX_LINE_BYTES)]);
        }
        Robots {
            groups: parser.groups,
            sitemaps: parser.sitemaps,
        }
    }

    /// Everything allowed: what a robots.txt answered with a 4xx status means
    /// (RFC 9309 2.3.1.3).
    pub fn allow_all() -> Robots {
        Robots::default()
    }

    /// Everything disallowed (except `/robots.txt` itself): what a robots.txt that answered
    /// 5xx or could not be reached means (RFC 9309 2.3.1.4).
    pub fn disallow_all() -> Robots {
        Robots {
            groups: vec![Group {
                global: true,
                rules: vec![Rule {
                    allow: false,
                    pattern: "/".to_owned(),
                }],
                ..Group::default()
            }],
            sitemaps: Vec::new(),
        }
    }

    /// Whether the crawler whose product token is `user_agent` may fetch `url`.
    ///
    /// `user_agent` is compared whole and case-insensitively against the robots.txt
    /// user-agent lines: pass [`product_token`] of the User-Agent header, not the header
    /// itself (Google does the same: `"Foo Bar"` does not match `User-agent: Foo`).
    ///
    /// Only the URL's path, parameters and query matter. A [`Url`] is always
    /// percent-encoded, so a URL typed with raw non-ASCII characters is matched in its
    /// encoded form, which is what goes on the wire; [`Robots::is_allowed_path`] takes the
    /// path as a raw string instead.
    pub fn is_allowed(&self, user_agent: &str, url: &Url) -> bool {
        self.is_allowed_path(user_agent, &url[Position::BeforePath..Position::AfterQuery])
    }

    /// Like [`Robots::is_allowed`], for a path with its parameters and query
    /// (`/a/b;p?q=1`), compared byte for byte as given. An empty path means `/`.
    ///
    /// The longest matching pattern decides; on equal length, allow wins. `*` matches any
    /// run of bytes, a final `$` anchors the end. `/robots.txt` is always allowed.
    pub fn is_allowed_path(&self, user_agent: &str, path: &str) -> bool {
        let path = if path.is_empty() { "/" } else { path };
        if path == "/robots.txt" {
            return true;
        }
        let mut allow = None;
        let mut disallow = None;
        for rule in self.groups_for(user_agent).flat_map(|g| &g.rules) {
            if pattern_matches(&rule.pattern, path) {
                let best = if rule.allow {
                    &mut allow
                } else {
                    &mut disallow
                };
                *best = (*best).max(Some(rule.pattern.len()));
            }
        }
        match (allow, disallow) {
            (_, None) => true,
            (None, Some(_)) => false,
            (Some(allow), Some(disallow)) => allow >= disallow,
        }
    }

    /// Crawl-delay of the group that applies to `user_agent` (its own groups if any name it,
    /// else the `*` groups), if one is given and parses as a non-negative number of seconds
    /// (fractions allowed). Values too large for a [`Duration`] saturate.
    pub fn crawl_delay(&self, user_agent: &str) -> Option<Duration> {
        self.groups_for(user_agent).find_map(|g| g.crawl_delay)
    }

    /// How many allow and disallow lines govern `user_agent` (for the live hosts table).
    pub fn rule_count(&self, user_agent: &str) -> usize {
        self.groups_for(user_agent).map(|g| g.rules.len()).sum()
    }

    /// The `Sitemap:` values, as written and in order; relative ones are not resolved.
    pub fn sitemaps(&self) -> &[String] {
        &self.sitemaps
    }

    /// The groups that govern `user_agent`: every group naming it, merged; only when none
    /// does, every `*` group.
    fn groups_for<'a>(&'a self, user_agent: &'a str) -> impl Iterator<Item = &'a Group> + 'a {
        let specific = self.groups.iter().any(|g| g.names(user_agent));
        self.groups.iter().filter(move |g| {
            if specific {
                g.names(user_agent)
            } else {
                g.global
            }
        })
    }
}

/// The product token of a User-Agent header: `"trawl/0.1 (+https://…)"` gives `"trawl"`.
///
/// RFC 9309 2.2.1 allows letters, `-` and `_` only (no digits), and Google's parser cuts a
/// robots.txt user-agent value at the first other character; using the same rule for our
/// own name keeps the two sides comparable.
pub fn product_token(user_agent: &str) -> &str {
    let user_agent = user_agent.trim_start();
    let end = user_agent
        .bytes()
        .position(|b| !is_token_byte(b))
        .unwrap_or(user_agent.len());
    &user_agent[..end]
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'-' || b == b'_'
}

/// The body up to [`MAX_BYTES`], without the line that limit cuts in two.
fn within_cap(body: &[u8]) -> &[u8] {
    if body.len() <= MAX_BYTES {
        return body;
    }
    let head = &body[..MAX_BYTES];
    match head.iter().rposition(|&b| b == b'\n' || b == b'\r') {
        Some(end) => &head[..end],
        None => &[],
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    UserAgent,
    Allow,
    Disallow,
    Sitemap,
    CrawlDelay,
    Unknown,
}

impl Key {
    fn of(key: &[u8]) -> Key {
        // The misspellings are ones Google accepts because site owners really write them.
        const NAMES: &[(&[u8], Key)] = &[
            (b"user-agent", Key::UserAgent),
            (b"useragent", Key::UserAgent),
            (b"user agent", Key::UserAgent),
            (b"allow", Key::Allow),
            (b"disallow", Key::Disallow),
            (b"dissallow", Key::Disallow),
            (b"dissalow", Key::Disallow),
            (b"disalow", Key::Disallow),
            (b"diasllow", Key::Disallow),
            (b"disallaw", Key::Disallow),
            (b"sitemap", Key::Sitemap),
            (b"site-map", Key::Sitemap),
            (b"crawl-delay", Key::CrawlDelay),
            (b"crawldelay", Key::CrawlDelay),
        ];
        for (name, kind) in NAMES {
            if key.eq_ignore_ascii_case(name) {
                return *kind;
            }
        }
        Key::Unknown
    }
}

#[derive(Default)]
struct Parser {
    groups: Vec<Group>,
    sitemaps: Vec<String>,
    /// An allow or disallow line has been seen since the last user-agent line, so the next
    /// user-agent line opens a new group. Other lines (sitemap, crawl-delay, unknown) do
    /// not end the run of user-agent lines, as RFC 9309 and current Google agree.
    rules_started: bool,
}

impl Parser {
    fn line(&mut self, line: &[u8]) {
        let Some((key, value)) = split_line(line) else {
            return;
        };
        match Key::of(key) {
            Key::UserAgent => self.user_agent(value),
            Key::Allow => self.rule(true, value),
            Key::Disallow => self.rule(false, value),
            Key::Sitemap => {
                if !value.is_empty() {
                    self.sitemaps
                        .push(String::from_utf8_lossy(value).into_owned());
                }
            }
            Key::CrawlDelay => {
                if let (Some(group), Some(delay)) = (self.groups.last_mut(), parse_delay(value)) {
                    group.crawl_delay.get_or_insert(delay);
                }
            }
            Key::Unknown => {}
        }
    }

    fn user_agent(&mut self, value: &[u8]) {
        if self.rules_started || self.groups.is_empty() {
            self.groups.push(Group::default());
            self.rules_started = false;
        }
        let Some(group) = self.groups.last_mut() else {
            return;
        };
        // Google reads `* anything` as the global agent too.
        if value.first() == Some(&b'*') && value.get(1).is_none_or(u8::is_ascii_whitespace) {
            group.global = true;
            return;
        }
        let end = value
            .iter()
            .position(|&b| !is_token_byte(b))
            .unwrap_or(value.len());
        if end > 0 {
            let token = String::from_utf8_lossy(&value[..end]).to_ascii_lowercase();
            if !group.agents.contains(&token) {
                group.agents.push(token);
            }
        }
    }

    fn rule(&mut self, allow: bool, value: &[u8]) {
        // Rules before any user-agent line belong to no group (RFC 9309 2.1).
        let Some(group) = self.groups.last_mut() else {
            return;
        };
        self.rules_started = true;
        // An empty pattern matches nothing, so `Disallow:` alone allows everything.
        if value.is_empty() {
            return;
        }
        let pattern = normalise_pattern(value);
        if allow {
            // Google serves `/dir/index.html` (and `.htm`) as `/dir/`, so allowing the file
            // allows the directory URL too.
            if let Some(slash) = pattern.rfind('/') {
                if pattern[slash..].starts_with("/index.htm") {
                    group.rules.push(Rule {
                        allow: true,
                        pattern: format!("{}$", &pattern[..=slash]),
                    });
                }
            }
        }
        group.rules.push(Rule { allow, pattern });
    }
}

/// Split a line into key and value, without comment and surrounding whitespace.
fn split_line(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let line = match line.iter().position(|&b| b == b'#') {
        Some(comment) => &line[..comment],
        None => line,
    };
    let line = line.trim_ascii();
    if line.is_empty() {
        return None;
    }
    if let Some(colon) = line.iter().position(|&b| b == b':') {
        return Some((line[..colon].trim_ascii(), line[colon + 1..].trim_ascii()));
    }
    // A forgotten colon (`Disallow /x`) is common enough that Google accepts whitespace in
    // its place, but only when exactly two words leave no doubt about which is which.
    let is_blank = |b: &u8| *b == b' ' || *b == b'\t';
    let gap = line.iter().position(is_blank)?;
    let value = line[gap..].trim_ascii();
    if value.iter().any(is_blank) {
        return None;
    }
    Some((&line[..gap], value))
}

/// Percent-encode non-ASCII bytes and uppercase existing escapes, so a pattern written with
/// raw UTF-8 or lowercase hex matches the encoded path a client sends.
fn normalise_pattern(raw: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        match (b, raw.get(i + 1), raw.get(i + 2)) {
            (b'%', Some(hi), Some(lo)) if hi.is_ascii_hexdigit() && lo.is_ascii_hexdigit() => {
                out.push('%');
                out.push(char::from(hi.to_ascii_uppercase()));
                out.push(char::from(lo.to_ascii_uppercase()));
                i += 3;
                continue;
            }
            (b, ..) if !b.is_ascii() => {
                out.push('%');
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0xF)]));
            }
            (b, ..) => out.push(char::from(b)),
        }
        i += 1;
    }
    out
}

/// Whether `pattern` (`*` wildcards, optional final `$`) matches a prefix of `path`, or all
/// of it when anchored.
fn pattern_matches(pattern: &str, path: &str) -> bool {
    let (pattern, anchored) = match pattern.strip_suffix('$') {
        Some(rest) => (rest, true),
        None => (pattern, false),
    };
    let mut pieces = pattern.split('*');
    let first = pieces.next().unwrap_or("");
    let Some(mut rest) = path.strip_prefix(first) else {
        return false;
    };
    let Some(last) = pieces.next_back() else {
        return !anchored || rest.is_empty();
    };
    // Taking the leftmost occurrence of each middle piece leaves the most room for the
    // ones after it, so greedy search is exact for `*`-only patterns.
    for piece in pieces {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    if anchored {
        rest.ends_with(last)
    } else {
        rest.contains(last)
    }
}

/// A crawl-delay in seconds; negative, NaN and infinite values mean nothing.
fn parse_delay(value: &[u8]) -> Option<Duration> {
    let seconds: f64 = std::str::from_utf8(value).ok()?.parse().ok()?;
    if !seconds.is_finite() || seconds < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(robots: &str, agent: &str, path: &str) -> bool {
        Robots::parse(robots.as_bytes()).is_allowed_path(agent, path)
    }

    #[test]
    fn product_token_stops_at_first_character_outside_the_rfc_set() {
        assert_eq!(
            product_token("trawl/0.1 (+https://example.org/bot)"),
            "trawl"
        );
        assert_eq!(product_token("Foo-Bar_baz 2"), "Foo-Bar_baz");
        assert_eq!(product_token("  trawl"), "trawl");
        assert_eq!(product_token("bot2"), "bot");
        assert_eq!(product_token("/0.1"), "");
        assert_eq!(product_token(""), "");
        assert_eq!(product_token("ツbot"), "");
    }

    #[test]
    fn crawl_delay_of_own_group_else_global() {
        let robots = Robots::parse(
            b"User-agent: *\nCrawl-delay: 2.5\nDisallow: /tmp\n\n\
              User-agent: trawl\nCrawl-delay: 10\nDisallow: /x\n\
              User-agent: other\nDisallow: /\n",
        );
        assert_eq!(robots.crawl_delay("trawl"), Some(Duration::from_secs(10)));
        assert_eq!(robots.crawl_delay("TRAWL"), Some(Duration::from_secs(10)));
        assert_eq!(
            robots.crawl_delay("nobody"),
            Some(Duration::from_millis(2500))
        );
        // Its own group has no delay, and the `*` group does not apply to it.
        assert_eq!(robots.crawl_delay("other"), None);
    }

    #[test]
    fn crawl_delay_ignores_garbage() {
        for value in ["-1", "NaN", "inf", "soon", "", "1,5", "5s"] {
            let robots = Robots::parse(format!("User-agent: *\nCrawl-delay: {value}\n").as_bytes());
            assert_eq!(robots.crawl_delay("trawl"), None, "{value:?}");
        }
        let robots = Robots::parse(b"User-agent: *\nCrawl-delay: 1e300\n");
        assert_eq!(robots.crawl_delay("trawl"), Some(Duration::MAX));
        let robots = Robots::parse(b"User-agent: *\nCrawl-delay: 0\n");
        assert_eq!(robots.crawl_delay("trawl"), Some(Duration::ZERO));
    }

    /// Google ignores crawl-delay lines, so they cannot end a run of user-agent lines
    /// without `is_allowed` parting ways with Google; the delay then applies to the
    /// whole run, which errs on the polite side.
    #[test]
    fn crawl_delay_does_not_end_the_user_agent_run() {
        let robots = Robots::parse(b"User-agent: a\nCrawl-delay: 3\nUser-agent: b\nDisallow: /\n");
        assert_eq!(robots.crawl_delay("b"), Some(Duration::from_secs(3)));
        assert!(!robots.is_allowed_path("a", "/x"));
    }

    #[test]
    fn sitemaps_in_order_whatever_the_group() {
        let robots = Robots::parse(
            b"Sitemap: https://a.example/s1.xml\nUser-agent: x\nSitemap: /relative.xml\n\
              Site-map: https://a.example/s2.xml # comment\nsitemap:\n",
        );
        assert_eq!(
            robots.sitemaps(),
            [
                "https://a.example/s1.xml",
                "/relative.xml",
                "https://a.example/s2.xml"
            ]
        );
    }

    #[test]
    fn sitemap_with_invalid_utf8_is_lossy() {
        let robots = Robots::parse(b"Sitemap: https://a.example/\xFF.xml\n");
        assert_eq!(robots.sitemaps(), ["https://a.example/\u{FFFD}.xml"]);
    }

    #[test]
    fn body_is_read_up_to_the_cap_only() {
        let mut body = b"User-agent: *\n".to_vec();
        body.resize(MAX_BYTES - 100, b'\n');
        body.extend_from_slice(b"Disallow: /early\n");
        body.resize(MAX_BYTES + 1000, b'\n');
        body.extend_from_slice(b"Disallow: /late\n");
        let robots = Robots::parse(&body);
        assert!(!robots.is_allowed_path("trawl", "/early"));
        assert!(robots.is_allowed_path("trawl", "/late"));
    }

    #[test]
    fn line_cut_by_the_cap_is_dropped() {
        let mut body = b"User-agent: *\nDisallow: /\n".to_vec();
        body.resize(MAX_BYTES - 12, b'\n');
        // The cap falls inside this line; kept, its head `Allow: /publ` would allow `/publx`.
        body.extend_from_slice(b"Allow: /public/\n");
        let robots = Robots::parse(&body);
        assert!(!robots.is_allowed_path("trawl", "/publx"));
        assert!(!robots.is_allowed_path("trawl", "/public/"));
        let without_newline = vec![b'a'; MAX_BYTES + 1];
        assert!(Robots::parse(&without_newline).is_allowed_path("trawl", "/"));
    }

    #[test]
    fn bom_is_skipped() {
        let robots = Robots::parse(b"\xEF\xBB\xBFUser-agent: *\nDisallow: /x\n");
        assert!(!robots.is_allowed_path("trawl", "/x"));
    }

    #[test]
    fn line_endings_cr_crlf_lf() {
        for body in [
            "User-agent: *\rDisallow: /x\rAllow: /x/y\r",
            "User-agent: *\r\nDisallow: /x\r\nAllow: /x/y\r\n",
            "User-agent: *\nDisallow: /x\nAllow: /x/y",
            "User-agent: *\r\nDisallow: /x\rAllow: /x/y\n",
        ] {
            assert!(!allowed(body, "trawl", "/x/z"), "{body:?}");
            assert!(allowed(body, "trawl", "/x/y"), "{body:?}");
        }
    }

    #[test]
    fn allow_all_and_disallow_all() {
        let all = Robots::allow_all();
        let none = Robots::disallow_all();
        let url = Url::parse("https://example.org/a?b").unwrap();
        let robots_url = Url::parse("https://example.org/robots.txt").unwrap();
        assert!(all.is_allowed("trawl", &url));
        assert!(!none.is_allowed("trawl", &url));
        assert!(!none.is_allowed("", &url));
        assert!(none.is_allowed("trawl", &robots_url));
        assert_eq!(none.crawl_delay("trawl"), None);
        assert!(none.sitemaps().is_empty());
    }

    #[test]
    fn robots_txt_itself_is_always_allowed() {
        assert!(allowed(
            "User-agent: *\nDisallow: /",
            "trawl",
            "/robots.txt"
        ));
        assert!(!allowed(
            "User-agent: *\nDisallow: /",
            "trawl",
            "/robots.txt?x"
        ));
    }

    #[test]
    fn url_query_and_params_count_fragment_does_not() {
        let robots =
            Robots::parse(b"User-agent: *\nDisallow: /*?private\nDisallow: /*;jsessionid\n");
        let check = |u: &str| robots.is_allowed("trawl", &Url::parse(u).unwrap());
        assert!(!check("https://e.org/a?private=1"));
        assert!(!check("https://e.org/a;jsessionid=1"));
        assert!(check("https://e.org/a#?private"));
        assert!(check("https://e.org"));
    }

    #[test]
    fn wildcards() {
        assert!(pattern_matches("/a*b*c", "/a-b-c-d"));
        assert!(pattern_matches("/a*b*c$", "/abcbc"));
        assert!(!pattern_matches("/a*b*c$", "/abcd"));
        assert!(pattern_matches("*", "/"));
        assert!(pattern_matches("/*$", "/"));
        assert!(pattern_matches("/$x", "/$xyz"));
        assert!(!pattern_matches("/a$", "/ab"));
        assert!(pattern_matches("/a$", "/a"));
        assert!(pattern_matches("/**", "/"));
        assert!(!pattern_matches("/x*x$", "/x"));
    }

    #[test]
    fn patterns_are_percent_normalised() {
        assert_eq!(normalise_pattern("/ツ".as_bytes()), "/%E3%83%84");
        assert_eq!(normalise_pattern(b"/%e3%83%84"), "/%E3%83%84");
        assert_eq!(normalise_pattern(b"/%zz%4"), "/%zz%4");
        assert_eq!(normalise_pattern(b"/\xFF"), "/%FF");
    }

    #[test]
    fn hostile_input_does_not_panic() {
        let bodies: [&[u8]; 6] = [
            b"\xFF\xFE\x00:",
            b":::\n:\n#\n*\n$",
            b"User-agent: *\nDisallow: $\nAllow: *\nDisallow: ****$$",
            b"user-agent\n disallow\n",
            b"User-agent: *\nDisallow: /%",
            b"\xEF\xBB",
        ];
        for body in bodies {
            let robots = Robots::parse(body);
            for path in ["", "/", "/\u{30c4}", "/%", "$", "*"] {
                let _ = robots.is_allowed_path("*", path);
                let _ = robots.is_allowed_path("", path);
            }
        }
    }
}
