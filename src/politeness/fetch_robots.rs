//! Fetching one host's robots.txt by RFC 9309's rules: up to five redirects; a 4xx means
//! no rules (everything allowed); a 5xx, a 429 or no answer means the rules cannot be
//! known (everything disallowed until they can); at most [`MAX_BYTES`] are parsed.

use url::Url;

use super::robots::{Robots, MAX_BYTES};
use crate::fetch::{FetchError, Fetcher};

/// Redirect hops followed to reach a robots.txt (RFC 9309 2.3.1.2: at least five).
const MAX_HOPS: usize = 5;

/// What fetching robots.txt gave.
#[derive(Debug)]
pub enum RobotsOutcome {
    /// A robots.txt was read (possibly empty).
    Rules(Robots),
    /// There is none (4xx, or too many redirects): everything is allowed.
    AllowAll,
    /// It could not be read now (5xx, 429, a body cut off): nothing may be fetched yet.
    Unavailable(String),
    /// The host gave no response at all (no such name, refused, timed out): nothing may
    /// be fetched yet, and what its URLs would have met is this error.
    Unreachable(FetchError),
}

/// The robots.txt URL for the origin of `url`.
pub fn robots_url(url: &Url) -> Option<Url> {
    let mut r = url.clone();
    r.set_path("/robots.txt");
    r.set_query(None);
    r.set_fragment(None);
    let _ = r.set_username("");
    let _ = r.set_password(None);
    Some(r)
}

/// Fetch and parse the robots.txt at `url`.
pub async fn fetch_robots(fetcher: &Fetcher, mut url: Url) -> RobotsOutcome {
    for _ in 0..=MAX_HOPS {
        let mut resp = match fetcher.get(&url).await {
            Ok(r) => r,
            Err(e) => return RobotsOutcome::Unreachable(e),
        };
        let status = resp.status().as_u16();
        match status {
            300..=399 => {
                let next = resp.location().and_then(|l| url.join(l.trim()).ok());
                match next {
                    Some(next) => {
                        url = next;
                        continue;
                    }
                    None => return RobotsOutcome::AllowAll,
                }
            }
            429 => return RobotsOutcome::Unavailable("robots.txt answered 429".into()),
            400..=499 => return RobotsOutcome::AllowAll,
            500..=599 => {
                return RobotsOutcome::Unavailable(format!("robots.txt answered {status}"))
            }
            _ => {}
        }
        let mut body = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    let room = MAX_BYTES.saturating_sub(body.len());
                    body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    if body.len() >= MAX_BYTES {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => return RobotsOutcome::Unavailable(e.to_string()),
            }
        }
        return RobotsOutcome::Rules(Robots::parse(&body));
    }
    // RFC 9309 2.3.1.2: past the redirect limit the file may be treated as unavailable
    // in the 4xx sense.
    RobotsOutcome::AllowAll
}
