//! Whether a URL or host reaches inside the network (SSRF).
//!
//! A URL is read as WHATWG's URL standard reads it (the `url` crate, what
//! `reqwest`, browsers and Node read): its host is IDNA-mapped, and a host
//! that ends in a number is an IPv4 address in any of its spellings
//! (`2130706433`, `0177.1`, `0x7f.1`, `127.1` are all 127.0.0.1). The
//! authority ends at the first `/`, `?` or `#`, and userinfo ends at the
//! last `@` before it, so `http://evil.com@127.0.0.1` and
//! `http://127.0.0.1#@evil.com` both go to 127.0.0.1.
//!
//! Other clients read some URLs differently (curl and Python's `urllib`
//! take `\` as part of the authority, WHATWG as a `/`). A URL its readers
//! disagree on (see [`super::readers`]) is [`Inside::Ambiguous`]: refused
//! rather than guessed.
//!
//! An address is inside when it is not a global unicast address: IPv4
//! `0/8`, `10/8`, `100.64/10` (CGNAT, Alibaba's metadata), `127/8`,
//! `169.254/16` (link-local, the metadata of AWS, GCP, Azure, OCI…),
//! `172.16/12`, `192.0.0/24`, the documentation and benchmarking ranges,
//! `192.168/16`, multicast, `240/4` and broadcast; Azure's host address
//! 168.63.129.16; IPv6 `::`, `::1`, ULA `fc00::/7` (AWS's `fd00:ec2::254`),
//! link-local `fe80::/10`, site-local `fec0::/10`, multicast, documentation;
//! and the IPv4 address inside IPv4-mapped (`::ffff:a.b.c.d`),
//! IPv4-compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`) and 6to4
//! (`2002::/16`) addresses. Teredo (`2001::/32`) hides its address and is
//! inside too.
//!
//! A name is inside when it is `localhost` or under it, a local-only
//! suffix (`.local`, `.internal`, `.home.arpa`, `.lan`, `.intranet`,
//! `.corp`), or a metadata name (`metadata`, `metadata.google.internal`,
//! `metadata.goog`, `instance-data`), trailing dots ignored. Any other name
//! is [`Reach::Name`]: where it goes depends on DNS, and [`resolve`] asks
//! (a public name can resolve to a private address).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Where a URL or host goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// A global address.
    Public(IpAddr),
    /// A name with no local meaning; where it goes depends on DNS.
    Name(String),
    /// Inside the network, and why.
    Inside(Inside),
}

/// Why a URL or host is inside the network, or cannot be judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inside {
    /// `127/8`, `::1`, `localhost`.
    Loopback,
    /// `0.0.0.0/8`, `::`.
    Unspecified,
    /// `10/8`, `172.16/12`, `192.168/16`, IPv6 ULA, local-only names.
    Private,
    /// `100.64/10`.
    SharedCgnat,
    /// `169.254/16`, `fe80::/10`.
    LinkLocal,
    /// A cloud metadata address or name.
    Metadata,
    /// Multicast, broadcast, documentation, benchmarking and reserved
    /// ranges, and Teredo.
    Reserved,
    /// Readers of URLs disagree on where it goes.
    Ambiguous,
    /// Not a URL with a host.
    Unreadable,
    /// A name that did not resolve in the time allowed.
    Unresolved,
}

impl Inside {
    /// A short name for logs, headers and feedback.
    pub fn as_str(self) -> &'static str {
        match self {
            Inside::Loopback => "loopback",
            Inside::Unspecified => "unspecified",
            Inside::Private => "private",
            Inside::SharedCgnat => "shared (CGNAT)",
            Inside::LinkLocal => "link-local",
            Inside::Metadata => "cloud metadata",
            Inside::Reserved => "reserved",
            Inside::Ambiguous => "ambiguous",
            Inside::Unreadable => "unreadable",
            Inside::Unresolved => "unresolved",
        }
    }
}

/// Longest URL judged; longer is [`Inside::Unreadable`].
pub(crate) const MAX_URL: usize = 8 * 1024;

/// Where URL `text` goes.
pub fn classify_url(text: &str) -> Reach {
    if text.len() > MAX_URL {
        return Reach::Inside(Inside::Unreadable);
    }
    if super::readers::ambiguity(text).is_some() {
        return Reach::Inside(Inside::Ambiguous);
    }
    let Ok(url) = url::Url::parse(text) else {
        return Reach::Inside(Inside::Unreadable);
    };
    match url.host() {
        Some(url::Host::Ipv4(ip)) => classify_ip(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => classify_ip(IpAddr::V6(ip)),
        Some(url::Host::Domain(name)) => classify_name(name),
        None => Reach::Inside(Inside::Unreadable),
    }
}

/// A name after WHATWG's host parsing (lower-case, IDNA-mapped).
fn classify_name(name: &str) -> Reach {
    let name = name.trim_end_matches('.');
    if name.is_empty() {
        return Reach::Inside(Inside::Unreadable);
    }
    // A non-special scheme's opaque host keeps its non-ASCII characters
    // percent-encoded, which readers decode differently.
    if name.contains('%') {
        return Reach::Inside(Inside::Ambiguous);
    }
    // WHATWG reads a host ending in a number as IPv4 and fails when it is
    // not one; with the trailing dots gone, read it again.
    if let Ok(url) = url::Url::parse(&format!("http://{name}/"))
        && let Some(url::Host::Ipv4(ip)) = url.host()
    {
        return classify_ip(IpAddr::V4(ip));
    }
    const METADATA: [&str; 5] = [
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
    ];
    const LOCAL: [&str; 6] = ["local", "internal", "home.arpa", "lan", "intranet", "corp"];
    let under = |suffix: &str| name == suffix || name.ends_with(&format!(".{suffix}"));
    if METADATA.contains(&name) {
        Reach::Inside(Inside::Metadata)
    } else if under("localhost") {
        Reach::Inside(Inside::Loopback)
    } else if LOCAL.iter().any(|s| under(s)) {
        Reach::Inside(Inside::Private)
    } else {
        Reach::Name(name.to_string())
    }
}

/// Most addresses of one name judged.
pub(crate) const MAX_ADDRESSES: usize = 64;

/// Where `name` goes once resolved, within `timeout`: inside when any of
/// its addresses is (a round-robin name with one private address is one
/// retry away from it), [`Inside::Unresolved`] when it does not resolve in
/// time. The client resolves the name again when it fetches the URL, and
/// DNS may answer otherwise then (rebinding): resolution narrows what a
/// name can reach, it does not pin it.
pub(crate) async fn resolve(name: &str, timeout: std::time::Duration) -> Reach {
    let lookup = tokio::net::lookup_host((name, 0));
    let Ok(Ok(addresses)) = tokio::time::timeout(timeout, lookup).await else {
        return Reach::Inside(Inside::Unresolved);
    };
    let mut first = None;
    for addr in addresses.take(MAX_ADDRESSES) {
        match classify_ip(addr.ip()) {
            Reach::Public(ip) => {
                first.get_or_insert(ip);
            }
            inside => return inside,
        }
    }
    first.map_or(Reach::Inside(Inside::Unresolved), Reach::Public)
}

/// Where address `ip` goes.
pub fn classify_ip(ip: IpAddr) -> Reach {
    let inside = match ip {
        IpAddr::V4(v4) => inside_v4(v4),
        IpAddr::V6(v6) => inside_v6(v6),
    };
    match inside {
        Some(why) => Reach::Inside(why),
        None => Reach::Public(ip),
    }
}

fn inside_v4(ip: Ipv4Addr) -> Option<Inside> {
    let [a, b, c, d] = ip.octets();
    Some(match (a, b, c, d) {
        (169, 254, 169, 254) | (100, 100, 100, 200) | (168, 63, 129, 16) => Inside::Metadata,
        (0, ..) => Inside::Unspecified,
        (127, ..) => Inside::Loopback,
        (10, ..) | (192, 168, ..) => Inside::Private,
        (172, b, ..) if (16..32).contains(&b) => Inside::Private,
        (100, b, ..) if (64..128).contains(&b) => Inside::SharedCgnat,
        (169, 254, ..) => Inside::LinkLocal,
        (192, 0, 0 | 2, _) | (198, 51, 100, _) | (203, 0, 113, _) => Inside::Reserved,
        (198, 18 | 19, ..) | (192, 88, 99, _) => Inside::Reserved,
        (a, ..) if a >= 224 => Inside::Reserved,
        _ => return None,
    })
}

fn inside_v6(ip: Ipv6Addr) -> Option<Inside> {
    let s = ip.segments();
    if ip.is_unspecified() {
        return Some(Inside::Unspecified);
    }
    if ip.is_loopback() {
        return Some(Inside::Loopback);
    }
    // An IPv4 address inside: mapped, compatible, NAT64, 6to4.
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    let v4 = match s {
        [0, 0, 0, 0, 0, 0xffff, hi, lo] | [0, 0, 0, 0, 0, 0, hi, lo] => Some(embedded(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(embedded(hi, lo)),
        [0x2002, hi, lo, ..] => Some(embedded(hi, lo)),
        _ => None,
    };
    if let Some(v4) = v4 {
        return inside_v4(v4);
    }
    Some(match s[0] {
        0xfd00 if s == [0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254] => Inside::Metadata,
        x if x & 0xfe00 == 0xfc00 => Inside::Private,
        x if x & 0xffc0 == 0xfe80 => Inside::LinkLocal,
        x if x & 0xffc0 == 0xfec0 => Inside::Private,
        x if x & 0xff00 == 0xff00 => Inside::Reserved,
        0x2001 if s[1] == 0 => Inside::Reserved,
        0x2001 if s[1] == 0x0db8 => Inside::Reserved,
        0x0100 if s[1..4] == [0, 0, 0] => Inside::Reserved,
        // Outside 2000::/3 nothing is global unicast.
        x if x & 0xe000 != 0x2000 => Inside::Reserved,
        _ => return None,
    })
}

#[cfg(test)]
#[path = "ssrf_tests.rs"]
mod tests;
