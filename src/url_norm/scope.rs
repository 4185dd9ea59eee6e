//! Which URLs a crawl fetches, decided from its seeds.

use regex::RegexSet;
use url::{Host, Url};

use super::{canonical_key, is_fetchable_scheme, UrlError};

use crate::names::stable_names;

stable_names! {
    /// How far from its seeds a crawl may go.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum ScopeMode ("scope mode") {
        /// Same host name as a seed (any port, http or https).
        #[default]
        Host = "host",
        /// Same registrable domain as a seed, subdomains included.
        Domain = "domain",
        /// Canonical key starts with a seed's directory.
        Prefix = "prefix",
    }
}

/// Why a URL is outside a crawl's scope (admission records it as the URL's skip reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    /// Outside the scope mode's bounds.
    OutOfScope,
    /// Matched an `--exclude` pattern.
    Excluded,
    /// `--include` patterns were given and none matched.
    NotIncluded,
    /// Not http or https.
    UnsupportedScheme,
}

/// Which URLs a crawl fetches. Built once from the seeds.
#[derive(Debug, Clone)]
pub struct Scope {
    mode: ScopeMode,
    /// Seed hosts compared for equality: all of them in host mode; in domain mode the
    /// IP addresses and hosts without a registrable domain.
    hosts: Vec<String>,
    /// Registrable domains of the seeds (domain mode only).
    domains: Vec<String>,
    /// Canonical keys of the seeds' directories (prefix mode only).
    prefixes: Vec<String>,
    include: RegexSet,
    exclude: RegexSet,
}

impl Scope {
    /// Build the scope of a crawl from its seeds.
    ///
    /// `include` / `exclude` are regexes matched unanchored against the canonical key.
    /// A bad regex gives [`UrlError::BadPattern`] naming the option and the pattern.
    pub fn new(
        seeds: &[Url],
        mode: ScopeMode,
        include: &[String],
        exclude: &[String],
    ) -> Result<Scope, UrlError> {
        let mut hosts = Vec::new();
        let mut domains = Vec::new();
        let mut prefixes = Vec::new();
        for seed in seeds {
            let Some(host) = seed.host_str() else {
                continue;
            };
            let host = host.to_ascii_lowercase();
            match mode {
                ScopeMode::Host => hosts.push(host),
                ScopeMode::Domain => match registrable_domain(seed) {
                    Some(domain) => domains.push(domain.to_ascii_lowercase()),
                    None => hosts.push(host),
                },
                ScopeMode::Prefix => prefixes.push(seed_directory_key(seed)),
            }
        }
        for list in [&mut hosts, &mut domains, &mut prefixes] {
            list.sort();
            list.dedup();
        }
        Ok(Scope {
            mode,
            hosts,
            domains,
            prefixes,
            include: compile_patterns("include", include)?,
            exclude: compile_patterns("exclude", exclude)?,
        })
    }

    /// The mode this scope was built with.
    pub fn mode(&self) -> ScopeMode {
        self.mode
    }

    /// Decide for one link; `key` is `canonical_key(url)`.
    ///
    /// Checked in order: scheme (unsupported-scheme), mode (out-of-scope), exclude
    /// patterns (excluded), include patterns (not-included, when any were given).
    pub fn check(&self, url: &Url, key: &str) -> Result<(), Miss> {
        if !is_fetchable_scheme(url) {
            return Err(Miss::UnsupportedScheme);
        }
        if !self.in_mode(url, key) {
            return Err(Miss::OutOfScope);
        }
        if self.exclude.is_match(key) {
            return Err(Miss::Excluded);
        }
        if !self.include.is_empty() && !self.include.is_match(key) {
            return Err(Miss::NotIncluded);
        }
        Ok(())
    }

    /// An http(s) URL outside the scope mode's bounds that no `--exclude` pattern matches:
    /// what `check-external` checks. (`--include` patterns say what to crawl, so they do
    /// not apply to it.)
    pub fn is_external(&self, url: &Url, key: &str) -> bool {
        is_fetchable_scheme(url) && !self.in_mode(url, key) && !self.exclude.is_match(key)
    }

    fn in_mode(&self, url: &Url, key: &str) -> bool {
        match self.mode {
            ScopeMode::Host | ScopeMode::Domain => {
                let Some(host) = url.host_str() else {
                    return false;
                };
                if self.hosts.iter().any(|h| h == host) {
                    return true;
                }
                // An IP address is never a subdomain, even if its digits end like one.
                matches!(url.host(), Some(Host::Domain(_)))
                    && self.domains.iter().any(|d| is_same_or_subdomain(host, d))
            }
            ScopeMode::Prefix => self.prefixes.iter().any(|p| key.starts_with(p.as_str())),
        }
    }
}

/// The registrable domain of a seed's host; `None` for IP addresses and for hosts the
/// public suffix list cannot split (a bare `localhost`, a public suffix itself).
fn registrable_domain(seed: &Url) -> Option<&str> {
    match seed.host()? {
        Host::Domain(host) => psl::domain_str(host),
        Host::Ipv4(_) | Host::Ipv6(_) => None,
    }
}

/// `host == domain` or `host` ends with `.domain`, without allocating.
fn is_same_or_subdomain(host: &str, domain: &str) -> bool {
    host == domain
        || (host.len() > domain.len()
            && host.ends_with(domain)
            && host.as_bytes()[host.len() - domain.len() - 1] == b'.')
}

/// The canonical key of a seed's "directory": query and fragment removed, path cut after
/// its last `/`. `https://ex.org/docs/index.html` gives `https://ex.org/docs/`.
fn seed_directory_key(seed: &Url) -> String {
    let mut dir = seed.clone();
    dir.set_query(None);
    dir.set_fragment(None);
    let path = seed.path();
    let cut = path.rfind('/').map_or(0, |i| i + 1);
    let dir_path = path[..cut].to_string();
    dir.set_path(&dir_path);
    canonical_key(&dir)
}

fn compile_patterns(option: &'static str, patterns: &[String]) -> Result<RegexSet, UrlError> {
    // Compile one by one first so the error names the pattern at fault.
    for pattern in patterns {
        regex::Regex::new(pattern).map_err(|e| UrlError::BadPattern {
            option,
            pattern: pattern.clone(),
            reason: e.to_string(),
        })?;
    }
    RegexSet::new(patterns).map_err(|e| UrlError::BadPattern {
        option,
        pattern: patterns.join(" "),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_mode_names() {
        for &mode in ScopeMode::ALL {
            assert_eq!(mode.as_str().parse::<ScopeMode>(), Ok(mode));
            assert_eq!(mode.to_string(), mode.as_str());
        }
        assert_eq!(ScopeMode::default(), ScopeMode::Host);
        assert!("Host".parse::<ScopeMode>().is_err());
        assert_eq!(
            serde_json::to_string(&ScopeMode::Domain).unwrap(),
            "\"domain\""
        );
        assert_eq!(
            serde_json::from_str::<ScopeMode>("\"prefix\"").unwrap(),
            ScopeMode::Prefix
        );
    }

    fn scope(seeds: &[&str], mode: ScopeMode) -> Scope {
        scope_with(seeds, mode, &[], &[])
    }

    fn scope_with(seeds: &[&str], mode: ScopeMode, include: &[&str], exclude: &[&str]) -> Scope {
        let seeds: Vec<Url> = seeds.iter().map(|s| Url::parse(s).unwrap()).collect();
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Scope::new(&seeds, mode, &strings(include), &strings(exclude)).unwrap()
    }

    fn check(scope: &Scope, link: &str) -> Result<(), Miss> {
        let url = Url::parse(link).unwrap();
        scope.check(&url, &canonical_key(&url))
    }

    const OUT: Result<(), Miss> = Err(Miss::OutOfScope);

    #[test]
    fn scope_host_mode() {
        let s = scope(&["https://www.example.org/start"], ScopeMode::Host);
        for (link, want) in [
            ("https://www.example.org/", Ok(())),
            ("http://www.example.org/other", Ok(())),
            ("https://WWW.Example.org:8443/x", Ok(())),
            ("https://example.org/", OUT),
            ("https://docs.example.org/", OUT),
            ("https://www.example.org.evil.com/", OUT),
            ("https://other.org/", OUT),
            ("mailto:x@www.example.org", Err(Miss::UnsupportedScheme)),
            ("ftp://www.example.org/", Err(Miss::UnsupportedScheme)),
        ] {
            assert_eq!(check(&s, link), want, "{link}");
        }
    }

    #[test]
    fn scope_host_mode_several_seeds_and_ips() {
        let s = scope(
            &[
                "https://a.example/",
                "http://127.0.0.1:8080/",
                "http://[::1]/",
            ],
            ScopeMode::Host,
        );
        for (link, want) in [
            ("https://a.example/x", Ok(())),
            ("http://127.0.0.1/", Ok(())),
            ("http://127.0.0.1:9999/", Ok(())),
            ("http://[::1]:81/", Ok(())),
            ("http://127.0.0.2/", OUT),
            ("https://b.example/", OUT),
        ] {
            assert_eq!(check(&s, link), want, "{link}");
        }
    }

    #[test]
    fn scope_domain_mode() {
        let s = scope(&["https://www.example.org/"], ScopeMode::Domain);
        for (link, want) in [
            ("https://www.example.org/", Ok(())),
            ("https://example.org/", Ok(())),
            ("https://docs.example.org/a", Ok(())),
            ("http://a.b.example.org:8080/", Ok(())),
            ("https://badexample.org/", OUT),
            ("https://example.org.evil.com/", OUT),
            ("https://example.com/", OUT),
            ("https://org/", OUT),
        ] {
            assert_eq!(check(&s, link), want, "{link}");
        }
    }

    #[test]
    fn scope_domain_mode_multi_label_suffix() {
        // co.uk is a public suffix: siblings under it are different sites.
        let s = scope(&["https://shop.example.co.uk/"], ScopeMode::Domain);
        assert_eq!(check(&s, "https://blog.example.co.uk/"), Ok(()));
        assert_eq!(check(&s, "https://other.co.uk/"), OUT);
        assert_eq!(check(&s, "https://co.uk/"), OUT);
    }

    #[test]
    fn scope_domain_mode_falls_back_to_host_equality() {
        let s = scope(
            &[
                "http://127.0.0.1:8080/",
                "http://[::1]/",
                "http://localhost:3000/",
            ],
            ScopeMode::Domain,
        );
        for (link, want) in [
            ("http://127.0.0.1/", Ok(())),
            ("http://[::1]:9/", Ok(())),
            ("http://localhost/", Ok(())),
            ("http://127.0.0.2/", OUT),
            ("http://0.0.1/", OUT),
            ("http://a.localhost/", OUT),
        ] {
            assert_eq!(check(&s, link), want, "{link}");
        }
    }

    #[test]
    fn scope_domain_mode_ip_link_never_matches_a_domain() {
        // psl would call "0.1" the registrable domain of "10.0.0.1"; an IP is no subdomain.
        let s = scope(&["https://example.org/"], ScopeMode::Domain);
        assert_eq!(check(&s, "http://10.0.0.1/"), OUT);
    }

    #[test]
    fn scope_prefix_mode() {
        let s = scope(&["https://ex.org/docs/index.html?x=1#f"], ScopeMode::Prefix);
        for (link, want) in [
            ("https://ex.org/docs/", Ok(())),
            ("https://ex.org/docs/a/b", Ok(())),
            ("https://ex.org/docs/?q", Ok(())),
            ("https://ex.org/%64ocs/x", Ok(())),
            ("https://ex.org/docs/../x", OUT),
            ("https://ex.org/docs", OUT),
            ("https://ex.org/docsx/", OUT),
            ("http://ex.org/docs/a", OUT),
            ("https://ex.org:8443/docs/a", OUT),
            ("https://sub.ex.org/docs/a", OUT),
        ] {
            assert_eq!(check(&s, link), want, "{link}");
        }
    }

    #[test]
    fn scope_prefix_directories() {
        for (seed, inside, outside) in [
            (
                "https://ex.org/docs",
                "https://ex.org/anything",
                "https://ex.com/",
            ),
            (
                "https://ex.org/",
                "https://ex.org/a/b",
                "https://ex.org.au/",
            ),
            ("https://ex.org", "https://ex.org/a", "http://ex.org/a"),
            (
                "https://ex.org/a/b/?q=1",
                "https://ex.org/a/b/c",
                "https://ex.org/a/",
            ),
            (
                "https://ex.org/%7Eu/p",
                "https://ex.org/~u/q",
                "https://ex.org/%7Fu/q",
            ),
        ] {
            let s = scope(&[seed], ScopeMode::Prefix);
            assert_eq!(check(&s, inside), Ok(()), "{seed} {inside}");
            assert_eq!(check(&s, outside), OUT, "{seed} {outside}");
        }
    }

    #[test]
    fn scope_include_exclude_order() {
        let s = scope_with(
            &["https://ex.org/"],
            ScopeMode::Host,
            &["/docs/", "/blog/"],
            &[r"\.pdf$", "/docs/private/"],
        );
        for (link, want) in [
            ("https://ex.org/docs/a", Ok(())),
            ("https://ex.org/blog/b", Ok(())),
            ("https://ex.org/other", Err(Miss::NotIncluded)),
            ("https://ex.org/docs/private/x", Err(Miss::Excluded)),
            ("https://ex.org/docs/a.pdf", Err(Miss::Excluded)),
            ("https://ex.org/other.pdf", Err(Miss::Excluded)),
            ("https://other.org/docs/a", OUT),
            ("https://other.org/a.pdf", OUT),
            ("mailto:x@ex.org", Err(Miss::UnsupportedScheme)),
        ] {
            assert_eq!(check(&s, link), want, "{link}");
        }
    }

    #[test]
    fn scope_patterns_match_the_canonical_key() {
        let s = scope_with(&["https://ex.org/"], ScopeMode::Host, &["/~user/"], &[]);
        assert_eq!(check(&s, "https://ex.org/%7euser/a#frag"), Ok(()));
        let s = scope_with(&["https://ex.org/"], ScopeMode::Host, &[], &["#"]);
        assert_eq!(check(&s, "https://ex.org/a#frag"), Ok(()));
    }

    #[test]
    fn scope_bad_patterns() {
        let seeds = [Url::parse("https://ex.org/").unwrap()];
        let err = Scope::new(&seeds, ScopeMode::Host, &["ok".into(), "(".into()], &[]).unwrap_err();
        match &err {
            UrlError::BadPattern {
                option, pattern, ..
            } => {
                assert_eq!(*option, "include");
                assert_eq!(pattern, "(");
            }
            other => panic!("{other:?}"),
        }
        assert!(err
            .to_string()
            .starts_with("invalid --include pattern \"(\": "));
        let err = Scope::new(&seeds, ScopeMode::Host, &[], &["[z-a]".into()]).unwrap_err();
        assert!(matches!(
            err,
            UrlError::BadPattern {
                option: "exclude",
                ..
            }
        ));
    }
}
