//! Who may read the page: anyone on the machine when it is bound to loopback; with a
//! token, only requests carrying it (`Authorization: Bearer TOKEN` or `?token=TOKEN`).

use std::net::SocketAddr;

use super::UiError;

/// The address to bind, refused when it is not loopback and there is no token.
pub(crate) fn check_bind(addr: &str, token: Option<&str>) -> Result<SocketAddr, UiError> {
    let parsed: SocketAddr = addr.parse().map_err(|_| UiError::Address {
        addr: addr.to_string(),
    })?;
    if !parsed.ip().is_loopback() && token.is_none() {
        return Err(UiError::NeedsToken {
            addr: addr.to_string(),
        });
    }
    Ok(parsed)
}

/// Whether a request with these headers and query may be answered.
pub(super) fn allowed(token: Option<&str>, authorization: Option<&str>, query: &str) -> bool {
    let Some(token) = token else {
        return true;
    };
    let bearer = authorization.and_then(|h| h.strip_prefix("Bearer "));
    let queried = url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned());
    bearer.is_some_and(|b| same(b, token)) || queried.is_some_and(|q| same(&q, token))
}

/// Equal, in a time that does not depend on where they first differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_needs_no_token_and_others_do() {
        assert!(check_bind("127.0.0.1:0", None).is_ok());
        assert!(check_bind("[::1]:0", None).is_ok());
        assert!(matches!(
            check_bind("0.0.0.0:0", None),
            Err(UiError::NeedsToken { .. })
        ));
        assert!(check_bind("0.0.0.0:0", Some("t")).is_ok());
        assert!(matches!(
            check_bind("localhost", None),
            Err(UiError::Address { .. })
        ));
    }

    #[test]
    fn the_token_comes_by_header_or_query() {
        assert!(allowed(None, None, ""));
        assert!(!allowed(Some("s3"), None, ""));
        assert!(allowed(Some("s3"), Some("Bearer s3"), ""));
        assert!(!allowed(Some("s3"), Some("Bearer s4"), ""));
        assert!(allowed(Some("s3"), None, "q=a&token=s3"));
        assert!(!allowed(Some("s3"), None, "token=s"));
    }
}
