//! What the tests of the crawl's page share: the binary, JSON over HTTP, a free port.

use serde_json::Value;

/// The trawl binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_trawl")
}

/// GET `url`: its status and its body as JSON.
pub async fn get(url: &str) -> (u16, Value) {
    let r = reqwest::get(url).await.unwrap();
    let status = r.status().as_u16();
    (
        status,
        serde_json::from_slice(&r.bytes().await.unwrap()).unwrap(),
    )
}

/// GET `url`, which must answer 200, as JSON.
pub async fn json(url: &str) -> Value {
    let (status, v) = get(url).await;
    assert_eq!(status, 200, "{url}: {v}");
    v
}

/// A free loopback port (the crawl's `--ui` takes an address, not port 0 and a report).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
